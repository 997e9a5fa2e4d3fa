package feedsource_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/events/boltevents"
	"github.com/partner-edge/partner-edge/upstream/events/redisevents"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
	"github.com/partner-edge/partner-edge/upstream/webhooks/feedsource"
)

// docs/contract.md section 26, "Visible": each attempt is a client span
// linked to the walk that made its event. A walk is a root span (as the
// cache's pms.walk is) whose context the feed's load carries; the feed
// keeps it beside the walk's events (in memory, in EDGE_DATA_DIR across a
// restart, in a fleet's Redis for another member), and every attempt
// delivering them links to it.

// walkSpans makes the walks of a test as traces of their own.
type walkSpans struct {
	tel *testkit.Telemetry
	n   int
}

// walk loads s into the feed through load (Feed.Watch's) under a root
// span of its own, and returns that span's context.
func (w *walkSpans) walk(t *testing.T, load events.Loader) trace.SpanContext {
	t.Helper()
	w.n++
	ctx, span := w.tel.TracerProvider.Tracer("test").Start(context.Background(), "pms.walk", trace.WithNewRoot())
	defer span.End()
	if _, err := load(ctx); err != nil {
		t.Fatal(err)
	}
	return span.SpanContext()
}

// loaderOf is a load returning s.
func loaderOf(s *upstream.Snapshot) events.Loader {
	return func(context.Context) (*upstream.Snapshot, error) { return s, nil }
}

// twoWalks are the two versions of three properties: every one renamed
// by the second, a minute later.
func twoWalks(at time.Time) [2]*upstream.Snapshot {
	return [2]*upstream.Snapshot{upstream.SnapshotOf(props(3, "A"), at.Add(-time.Minute)), upstream.SnapshotOf(props(3, "B"), at)}
}

// deliver runs a Deliverer of f's events to a receiver answering 200,
// attempts traced by tp, until n events arrived, and returns the
// attempts' spans as exp received them.
func deliver(t *testing.T, tp trace.TracerProvider, exp *tracetest.InMemoryExporter, f *events.Feed, n int) []tracetest.SpanStub {
	t.Helper()
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { got.Add(1) }))
	defer srv.Close()
	mem := &webhooks.Memory{}
	if err := mem.Create(context.Background(), webhooks.Endpoint{ID: "whe_1", KeyID: "key_1", URL: srv.URL + "/hooks", Secret: webhooks.NewSecret()}); err != nil {
		t.Fatal(err)
	}
	src := &feedsource.Source{Keys: func(string) (feedsource.Access, bool) {
		return feedsource.Access{Key: "key_1", Feed: f, Viewer: grants(nil)}, true
	}}
	s := &webhooks.HTTPSender{Client: srv.Client(), AllowHTTP: true, Tracer: tp}
	d, err := webhooks.New(webhooks.Config{Store: mem, Source: src, Sender: s, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	testkit.Eventually(t, "every event delivered", func() bool { return got.Load() >= int64(n) })
	cancel()
	<-done
	s.Close()
	var attempts []tracetest.SpanStub
	for _, sp := range exp.GetSpans() {
		if sp.Name == "POST" && sp.SpanKind == trace.SpanKindClient {
			attempts = append(attempts, sp)
		}
	}
	exp.Reset()
	return attempts
}

// linkedTo checks that every attempt links to walk, once.
func linkedTo(t *testing.T, attempts []tracetest.SpanStub, n int, walk trace.SpanContext) {
	t.Helper()
	if len(attempts) != n {
		t.Fatalf("%d attempt spans; want %d", len(attempts), n)
	}
	for _, a := range attempts {
		if len(a.Links) != 1 || !a.Links[0].SpanContext.Equal(walk) {
			t.Errorf("attempt at %v links to %v; want the walk's span %v alone", a.Attributes, a.Links, walk)
		}
	}
}

// The feed in memory (a single edge without EDGE_DATA_DIR).
func TestAttemptLinksToItsWalkInMemory(t *testing.T) {
	tel := testkit.NewTelemetry(t)
	ws := &walkSpans{tel: tel}
	now := time.Now()
	f, err := events.New(events.Config{Mode: "live", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	snaps := twoWalks(now)
	ws.walk(t, f.Watch(loaderOf(snaps[0]))) // the baseline: no events
	walk := ws.walk(t, f.Watch(loaderOf(snaps[1])))
	linkedTo(t, deliver(t, tel.TracerProvider, tel.Spans, f, 3), 3, walk)
}

// The feed in EDGE_DATA_DIR: as appended, and after a restart, read back
// from the file.
func TestAttemptLinksToItsWalkInTheDataDir(t *testing.T) {
	tel := testkit.NewTelemetry(t)
	ws := &walkSpans{tel: tel}
	dir := t.TempDir()
	now := time.Now()
	clock := func() time.Time { return now }
	open := func() (*boltevents.DB, *events.Feed) {
		db, err := boltevents.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		st, err := db.Feed(boltevents.Config{Brand: "aurora", Mode: "live", Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		f, err := events.New(events.Config{Mode: "live", Shared: st, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		return db, f
	}
	db, f := open()
	snaps := twoWalks(now)
	ws.walk(t, f.Watch(loaderOf(snaps[0])))
	walk := ws.walk(t, f.Watch(loaderOf(snaps[1])))
	linkedTo(t, deliver(t, tel.TracerProvider, tel.Spans, f, 3), 3, walk)
	f.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, f = open() // a restart: the events, and their walk's span, from the file
	defer db.Close()
	defer f.Close()
	linkedTo(t, deliver(t, tel.TracerProvider, tel.Spans, f, 3), 3, walk)
}

// A fleet's feed in Redis: the member delivering is not the one that
// walked, and links to its walk all the same.
func TestAttemptLinksToAnotherMembersWalk(t *testing.T) {
	srv := redistest.Start(t) // skipped without redis-server; CI=true fails instead
	tel := testkit.NewTelemetry(t)
	ws := &walkSpans{tel: tel}
	now := time.Now()
	clock := func() time.Time { return now }
	member := func() *events.Feed {
		c, err := redisconn.New(redisconn.Config{URL: srv.URL()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		st, err := redisevents.New(redisevents.Config{Client: c, Secret: []byte("a-fleet-secret-of-the-tests-0123"),
			Brand: "aurora", Mode: "live", Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		f, err := events.New(events.Config{Mode: "live", Shared: st, Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Close)
		return f
	}
	walker, deliverer := member(), member()
	snaps := twoWalks(now)
	var walk trace.SpanContext
	for _, s := range snaps {
		// The walker walked s (fleet.Loader's Walk), then its cache loads it.
		walked := walker.Walked(func(context.Context) ([]mapping.Property, time.Time, error) { return nil, s.LoadedAt, nil })
		if _, _, err := walked(context.Background()); err != nil {
			t.Fatal(err)
		}
		walk = ws.walk(t, walker.Watch(loaderOf(s)))
		if _, err := deliverer.Watch(loaderOf(s))(context.Background()); err != nil { // another's: only read
			t.Fatal(err)
		}
	}
	linkedTo(t, deliver(t, tel.TracerProvider, tel.Spans, deliverer, 3), 3, walk)
}

// The whole path as the edge wires it: the cache's walks (root spans
// pms.walk, kept by the Telemetry's tail decisions) load through the
// feed's Watch, and the attempts at the second walk's events link to that
// walk's span as exported.
func TestAttemptLinksToTheCachesWalk(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := observability.New(context.Background(), observability.Config{SpanExporter: exp,
		Getenv: func(string) string { return "" }, TailSampling: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	clock := testkit.NewClockAt(time.Now())
	f, err := events.New(events.Config{Mode: "live", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var version atomic.Int64
	c := cache.New(nil, cache.Config{TTL: time.Hour, Key: "aurora/live", Now: clock.Now,
		Tracer: tel.Tracer(), KeepWalk: tel.KeepWalk, KeepRequest: tel.KeepRequest, LinkRequest: tel.LinkRequest,
		Load: f.Watch(func(context.Context) (*upstream.Snapshot, error) {
			return upstream.SnapshotOf(props(3, string(rune('A'+version.Add(1)))), clock.Now()), nil
		})})
	defer c.Close()
	if _, err := c.Snapshot(context.Background()); err != nil { // the first walk: the feed's baseline
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour) // past the TTL: the next read is served stale and starts a refresh
	if _, err := c.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	var walks []tracetest.SpanStub
	testkit.Eventually(t, "the refresh's walk span ended", func() bool {
		walks = walks[:0]
		for _, s := range exp.GetSpans() {
			if s.Name == cache.SpanWalk {
				walks = append(walks, s)
			}
		}
		return len(walks) == 2
	})
	linkedTo(t, deliver(t, tel.TracerProvider(), exp, f, 3), 3, walks[1].SpanContext)
}

package cache_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/upstream/pms"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// TestWalkIsATraceOfItsOwn (docs/contract.md section 20): a first load is
// a root span pms.walk with the PMS call beneath it, linked both ways with
// the request that started it; each rejected record is a mapping.rejected event on the
// walk's span, and its log line (at DEBUG: rejectLog) carries the walk's trace id.
// (TestFollowersLinkToTheWalk: the requests that joined it.)
func TestWalkIsATraceOfItsOwn(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := observability.New(context.Background(), observability.Config{SpanExporter: exp,
		Getenv: func(string) string { return "" }, TailSampling: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	sim := pmsim.New(pmsim.Config{Seed: 7, Brands: 1, HotelsPerBrand: 40})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	var logs bytes.Buffer
	now := testkit.From(testkit.Epoch) // the client, its walks and the cache share one clock
	c, err := cache.NewPMS(cache.PMSConfig{Mode: "live",
		Client: pms.ClientConfig{BaseURL: srv.URL, CallTimeout: 5 * time.Second, AttemptTimeout: 5 * time.Second, Now: now},
		Direct: pms.DirectOptions{Brand: "aurora", Now: now},
		Cache:  cache.Config{TTL: time.Hour, Key: "aurora/live", Now: now}, Telemetry: tel,
		Log: observability.NewLogger(&logs, "json", slog.LevelDebug)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leaderCtx, leader := tel.Tracer().Start(ctx, "GET /v1/properties", trace.WithSpanKind(trace.SpanKindServer))
	if _, err := c.Snapshot(leaderCtx); err != nil {
		t.Fatal(err)
	}
	leader.End()

	spans := exp.GetSpans()
	var walk *tracetest.SpanStub
	for i := range spans {
		if spans[i].Name == cache.SpanWalk {
			if walk != nil {
				t.Fatal("two walks for one load")
			}
			walk = &spans[i]
		}
	}
	if walk == nil {
		t.Fatalf("no %s span: %v", cache.SpanWalk, names(spans))
	}
	if walk.Parent.IsValid() {
		t.Errorf("the walk has a parent %v: want a root", walk.Parent)
	}
	if walk.SpanContext.TraceID() == leader.SpanContext().TraceID() {
		t.Error("the walk is in the request's trace")
	}
	if !hasLink(walk.Links, leader.SpanContext()) {
		t.Error("the walk does not link to the request that started it")
	}
	var call bool
	for _, s := range spans {
		if s.Name == upstream.SpanListHotels && s.Parent.SpanID() == walk.SpanContext.SpanID() {
			call = true
		}
	}
	if !call {
		t.Errorf("no %s beneath the walk: %v", upstream.SpanListHotels, names(spans))
	}
	for _, s := range spans {
		if s.SpanContext.SpanID() == leader.SpanContext().SpanID() && !hasLink(s.Links, walk.SpanContext) {
			t.Error("the request that started the walk does not link to it")
		}
	}

	var events int
	for _, e := range walk.Events {
		if e.Name == upstream.EventMappingRejected {
			events++
		}
	}
	var lines int
	for l := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil || m["msg"] != "pms record rejected" {
			continue
		}
		lines++
		if m["trace_id"] != walk.SpanContext.TraceID().String() {
			t.Errorf("rejection line %s: trace_id %v, want the walk's %s", l, m["trace_id"], walk.SpanContext.TraceID())
		}
	}
	if events == 0 || events != lines {
		t.Errorf("%d %s events on the walk, %d log lines: want as many, at least one", events, upstream.EventMappingRejected, lines)
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func hasLink(links []sdktrace.Link, sc trace.SpanContext) bool {
	for _, l := range links {
		if l.SpanContext.SpanID() == sc.SpanID() && l.SpanContext.TraceID() == sc.TraceID() {
			return true
		}
	}
	return false
}

// TestFollowersLinkToTheWalk: requests that joined a load in flight link
// to its walk and to the request leading it. synctest.Wait proves both
// wait on the one load before it is released.
func TestFollowersLinkToTheWalk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exp := tracetest.NewInMemoryExporter()
		tel, err := observability.New(context.Background(), observability.Config{SpanExporter: exp,
			Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		defer tel.Shutdown(context.Background())
		release := make(chan struct{})
		now := testkit.From(testkit.Epoch) // the tests' day, moving with the bubble's clock
		c := cache.New(nil, cache.Config{TTL: time.Hour, Key: "aurora/live", Tracer: tel.Tracer(), Now: now,
			Load: func(ctx context.Context) (*upstream.Snapshot, error) {
				<-release
				return upstream.SnapshotOf(nil, now()), nil
			}})
		defer c.Close()
		leaderCtx, leader := tel.Tracer().Start(context.Background(), "leader")
		followerCtx, follower := tel.Tracer().Start(context.Background(), "follower")
		done := make(chan error, 2)
		go func() { _, err := c.Snapshot(leaderCtx); done <- err }()
		synctest.Wait() // the leader's load has started
		go func() { _, err := c.Snapshot(followerCtx); done <- err }()
		synctest.Wait() // the follower waits on it
		close(release)
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		leader.End()
		follower.End()
		var walk, fol tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			switch s.Name {
			case cache.SpanWalk:
				walk = s
			case "follower":
				fol = s
			}
		}
		if !walk.SpanContext.IsValid() {
			t.Fatal("no walk span")
		}
		if !hasLink(fol.Links, walk.SpanContext) || !hasLink(fol.Links, leader.SpanContext()) {
			t.Errorf("the follower links to %v: want the walk %s and the leader %s", fol.Links, walk.SpanContext.SpanID(), leader.SpanContext().SpanID())
		}
		if !hasLink(walk.Links, leader.SpanContext()) || hasLink(walk.Links, follower.SpanContext()) {
			t.Errorf("the walk links to %v: want the leader only", walk.Links)
		}
	})
}

// TestRequestsLinkToTheStartUpWalk (docs/observability.md, "Walks"): the
// walk Prime starts at start-up is started by no request and links to
// none; a request that waits for it links to it, and to no leader.
func TestRequestsLinkToTheStartUpWalk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exp := tracetest.NewInMemoryExporter()
		tel, err := observability.New(context.Background(), observability.Config{SpanExporter: exp,
			Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		defer tel.Shutdown(context.Background())
		release := make(chan struct{})
		now := testkit.From(testkit.Epoch) // the tests' day, moving with the bubble's clock
		c := cache.New(nil, cache.Config{TTL: time.Hour, Key: "aurora/live", Tracer: tel.Tracer(), Now: now,
			Load: func(ctx context.Context) (*upstream.Snapshot, error) {
				<-release
				return upstream.SnapshotOf(nil, now()), nil
			}})
		defer c.Close()
		c.Prime()
		synctest.Wait() // the start-up walk has started
		waitCtx, waiter := tel.Tracer().Start(context.Background(), "waiter")
		done := make(chan error, 1)
		go func() { _, err := c.Snapshot(waitCtx); done <- err }()
		synctest.Wait() // the request waits on it
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		waiter.End()
		synctest.Wait() // Prime's goroutine has ended the walk's span
		var walks []tracetest.SpanStub
		var w tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			switch s.Name {
			case cache.SpanWalk:
				walks = append(walks, s)
			case "waiter":
				w = s
			}
		}
		if len(walks) != 1 {
			t.Fatalf("%d walk spans, want the start-up walk alone", len(walks))
		}
		if len(walks[0].Links) != 0 {
			t.Errorf("the start-up walk links to %v: want no request", walks[0].Links)
		}
		if len(w.Links) != 1 || !hasLink(w.Links, walks[0].SpanContext) {
			t.Errorf("the waiting request links to %v: want the start-up walk %s alone", w.Links, walks[0].SpanContext.SpanID())
		}
	})
}

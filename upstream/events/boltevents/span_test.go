package boltevents

import (
	"context"
	"testing"

	bolt "go.etcd.io/bbolt"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
)

// spanOf is the span n of a walk, sampled (kept).
func spanOf(n byte) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{n, 1}, SpanID: trace.SpanID{n, 2}, TraceFlags: trace.FlagsSampled})
}

// walksUnder has the feed observe s as a walk whose context carries sc.
func (e *edge) walksUnder(t *testing.T, c *clock, s *upstream.Snapshot, sc trace.SpanContext) {
	t.Helper()
	c.now = s.LoadedAt
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	if _, err := e.feed.Watch(func(context.Context) (*upstream.Snapshot, error) { return s, nil })(ctx); err != nil {
		t.Fatal(err)
	}
}

// spans are the spans the feed's events carry, oldest first.
func (e *edge) spans(t *testing.T) []trace.SpanContext {
	t.Helper()
	evs, _, err := e.feed.Read(context.Background(), "", false, 100, all{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]trace.SpanContext, len(evs))
	for i, ev := range evs {
		out[i] = ev.Walk
	}
	return out
}

// sameSpans reports whether got is want, span for span.
func sameSpans(got []trace.SpanContext, want ...trace.SpanContext) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			return false
		}
	}
	return true
}

// A walk's span is kept in the file once per walk, beside its events:
// the feed's events carry it as they are appended and after a restart;
// a walk without one carries none; a trimmed walk's span goes with it.
func TestFileKeepsTheWalksSpan(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t0}
	e := start(t, dir, c, Config{Max: 3})
	e.walksUnder(t, c, walk(0, prop(1, "A", "active"), prop(2, "B", "active")), spanOf(1))
	e.walksUnder(t, c, walk(1, prop(1, "A1", "active"), prop(2, "B1", "active")), spanOf(2))
	e.walksUnder(t, c, walk(2, prop(1, "A2", "active"), prop(2, "B1", "active")), trace.SpanContext{})
	none := trace.SpanContext{}
	if got := e.spans(t); !sameSpans(got, spanOf(2), spanOf(2), none) {
		t.Errorf("spans as appended: %v; want walk 1's on its two events, none on walk 2's", got)
	}
	e.stop()

	e = start(t, dir, c, Config{Max: 3})
	if got := e.spans(t); !sameSpans(got, spanOf(2), spanOf(2), none) {
		t.Errorf("spans after a restart: %v; want walk 1's on its two events, none on walk 2's", got)
	}
	if n := spansKept(t, e.db); n != 1 {
		t.Errorf("%d spans in the file; want 1, once per walk", n)
	}
	e.walksUnder(t, c, walk(3, prop(1, "A3", "active"), prop(2, "B3", "active")), spanOf(4))
	if got := e.spans(t); !sameSpans(got, none, spanOf(4), spanOf(4)) {
		t.Errorf("spans after walk 3: %v; want walk 3's on its two", got)
	}
	if n := spansKept(t, e.db); n != 1 {
		t.Errorf("%d spans in the file; want 1: walk 1's went with its events (Max: the file trims whole walks)", n)
	}
}

// A file written before spans were kept (no bucket of them) reads as walks
// without spans; a span an older build left behind when it trimmed its
// walk goes at the next append.
func TestFileWithoutSpans(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t0}
	e := start(t, dir, c, Config{})
	e.walks(t, c, walk(0, prop(1, "A", "active")))
	e.walks(t, c, walk(1, prop(1, "A1", "active")))
	st, err := e.db.Feed(Config{Brand: "aurora", Mode: "live", Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	bt, err := st.Read(context.Background(), events.Pos{}, 10)
	if err != nil || len(bt.Events) != 1 || len(bt.Spans) != 0 {
		t.Fatalf("read %+v %v; want one event, no span", bt, err)
	}
	// An older build trimmed walk 0's successor away but left its span.
	orphan := walkKey(walk(-1).LoadedAt.UnixMilli())
	if err := e.db.bolt.Update(func(tx *bolt.Tx) error {
		sp, err := tx.Bucket(st.name).CreateBucketIfNotExists(keySpans)
		if err != nil {
			return err
		}
		return sp.Put(orphan, events.AppendSpan(nil, spanOf(9)))
	}); err != nil {
		t.Fatal(err)
	}
	e.walksUnder(t, c, walk(2, prop(1, "A2", "active")), spanOf(3))
	if n := spansKept(t, e.db); n != 1 {
		t.Errorf("%d spans in the file; want walk 2's alone, the orphan gone", n)
	}
}

// spansKept counts the spans the file holds for the test's feed.
func spansKept(t *testing.T, db *DB) int {
	t.Helper()
	n := 0
	if err := db.bolt.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("feed:aurora:live"))
		if b == nil || b.Bucket(keySpans) == nil {
			return nil
		}
		n = b.Bucket(keySpans).Stats().KeyN
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

package events

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/upstream"
)

// spanCtx is a context carrying the span n of a walk, sampled or not.
func spanCtx(n byte, sampled bool) (context.Context, trace.SpanContext) {
	cfg := trace.SpanContextConfig{TraceID: trace.TraceID{n, 1}, SpanID: trace.SpanID{n, 2}}
	if sampled {
		cfg.TraceFlags = trace.FlagsSampled
	}
	sc := trace.NewSpanContext(cfg)
	return trace.ContextWithSpanContext(context.Background(), sc), sc
}

// walkUnder loads s into f as a walk whose context is ctx.
func walkUnder(t *testing.T, f *Feed, ctx context.Context, s *upstream.Snapshot) {
	t.Helper()
	if _, err := f.Watch(func(context.Context) (*upstream.Snapshot, error) { return s, nil })(ctx); err != nil {
		t.Fatal(err)
	}
}

// readWalks reads every event of f from its oldest and tells the span
// each carries: its walk's (trace id's first byte), or "-".
func readWalks(t *testing.T, f *Feed) string {
	t.Helper()
	evs, _, err := f.Read(context.Background(), "", false, 100, all{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if !e.Walk.IsValid() {
			out = append(out, "-")
			continue
		}
		out = append(out, string('0'+rune(e.Walk.TraceID()[0])))
	}
	return strings.Join(out, " ")
}

// A walk's events carry the span of the walk that made them (the span its
// load's context carries), kept once per walk; a walk left out of the
// traces (not sampled), or without a span, links to nothing; a walk's
// span stays while one of its events does; the page partners read never
// holds it.
func TestWalkSpanGoesWithItsEvents(t *testing.T) {
	c := &clock{t0}
	f := newFeed(t, c, Config{Max: 5}) // two events a walk: the oldest go one by one
	versions := func(i int) *upstream.Snapshot {
		return snap(t0.Add(time.Duration(i)*time.Minute), prop(1, string(rune('A'+i)), "active"), prop(2, string(rune('a'+i)), "active"))
	}
	ctx2, sc2 := spanCtx(2, true)
	ctx3, _ := spanCtx(3, false)
	ctx5, _ := spanCtx(5, true)
	steps := []struct {
		ctx  context.Context
		want string // the spans of the events held, oldest first
	}{
		{ctx2, ""}, // the baseline: no events
		{ctx2, "2 2"},
		{ctx3, "2 2 - -"},                   // not sampled: left out of the traces
		{context.Background(), "2 - - - -"}, // span 2's walk lost its first event (Max)
		{ctx5, "- - - 5 5"},
		{context.Background(), "- 5 5 - -"},
		{context.Background(), "5 - - - -"},
		{context.Background(), "- - - - -"},
	}
	for k, st := range steps {
		v := versions(k)
		c.now = v.LoadedAt
		walkUnder(t, f, st.ctx, v)
		if got := readWalks(t, f); got != st.want {
			t.Errorf("after walk %d: spans %q; want %q", k, got, st.want)
		}
		if k == 2 { // span 2's walk, and an unsampled one
			if n := len(f.log.spans); n != 1 {
				t.Errorf("%d spans kept; want one for the walk, not one per event", n)
			}
			evs, _, _ := f.Read(context.Background(), "", false, 1, all{})
			if len(evs) != 1 || !evs[0].Walk.Equal(sc2) {
				t.Fatalf("first event's span %v; want walk 2's %v", evs[0].Walk, sc2)
			}
			b, _, err := f.AppendPage(context.Background(), nil, "", false, 100, all{})
			if err != nil {
				t.Fatal(err)
			}
			if tid := sc2.TraceID(); strings.Contains(string(b), hex.EncodeToString(tid[:])) {
				t.Errorf("the page partners read holds the walk's trace id: %s", b)
			}
		}
	}
	if len(f.log.spans) != 0 {
		t.Errorf("spans kept %v; want none: their walks' events are gone", f.log.spans)
	}
}

// A fleet member delivering another's walk links to it: the span goes
// through the shared feed (Walk.Span, Batch.Spans) to every member's copy.
func TestWalkSpanThroughTheSharedFeed(t *testing.T) {
	c := &clock{t0}
	sh := &memShared{}
	a, b := newMember(t, c, sh), newMember(t, c, sh)
	s0 := snap(t0, prop(1, "A", "active"))
	a.leads(t, s0)
	b.takes(t, s0)
	s1 := snap(t0.Add(time.Minute), prop(1, "A1", "active"), prop(2, "B", "active"))
	c.now = s1.LoadedAt
	ctx, sc := spanCtx(7, true)
	a.f.walked.Store(s1.LoadedAt.UnixMilli())
	walkUnder(t, a.f, ctx, s1)
	if got := sh.spans[s1.LoadedAt.UnixMilli()]; !got.Equal(sc) {
		t.Fatalf("the walk's append carried span %v; want %v", got, sc)
	}
	b.takes(t, s1)
	for name, m := range map[string]*member{"the member that walked": a, "another": b} {
		if got := readWalks(t, m.f); got != "7 7" {
			t.Errorf("%s: spans %q; want the walk's on both events", name, got)
		}
	}
}

// AppendSpan and ParseSpan keep a span's ids and flags in SpanLen bytes;
// anything else does not parse.
func TestSpanBytes(t *testing.T) {
	_, sc := spanCtx(9, true)
	b := AppendSpan(nil, sc)
	if len(b) != SpanLen {
		t.Fatalf("%d bytes; want %d", len(b), SpanLen)
	}
	if got, ok := ParseSpan(b); !ok || !got.Equal(sc) {
		t.Errorf("parsed %v %v; want %v", got, ok, sc)
	}
	for _, bad := range [][]byte{nil, b[:SpanLen-1], append(b, 0), make([]byte, SpanLen)} {
		if _, ok := ParseSpan(bad); ok {
			t.Errorf("ParseSpan(%x) parses", bad)
		}
	}
}

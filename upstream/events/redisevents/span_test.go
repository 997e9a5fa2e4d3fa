package redisevents

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
)

// spanOf is the span n of a walk, sampled (kept).
func spanOf(n byte) trace.SpanContext {
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{n, 1}, SpanID: trace.SpanID{n, 2}, TraceFlags: trace.FlagsSampled})
}

// A walk's span is kept once per walk, in its first event (the field w,
// signed), and read back with it; a walk appended without a span (as
// every walk was before spans were kept) has no w and reads as before.
func TestStoreKeepsTheWalksSpan(t *testing.T) { scriptForms(t, testWalkSpan) }

func testWalkSpan(t *testing.T, f form) {
	ctx := context.Background()
	raw := f.raw(t)
	if err := flushAll(ctx, raw); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, f.client(t), Config{Now: at(t0)})
	w0, w1, w2 := t0.UnixMilli(), t0.Add(time.Minute).UnixMilli(), t0.Add(2*time.Minute).UnixMilli()
	a, b := item(1, "A"), item(2, "B")
	if _, err := s.Append(ctx, events.Walk{At: w0, Snapshot: snapOf(a, b), Span: spanOf(1)}); err != nil {
		t.Fatal(err)
	}
	a1, b1 := item(1, "A1"), item(2, "B1")
	changes := []events.Change{{Type: events.Updated, Item: a1}, {Type: events.Updated, Item: b1}}
	if _, err := s.Append(ctx, events.Walk{Prev: w0, At: w1, Changes: changes, Snapshot: snapOf(a1, b1), Span: spanOf(2)}); err != nil {
		t.Fatal(err)
	}
	a2 := item(1, "A2")
	if _, err := s.Append(ctx, events.Walk{Prev: w1, At: w2, Changes: []events.Change{{Type: events.Updated, Item: a2}}, Snapshot: snapOf(a2, b1)}); err != nil {
		t.Fatal(err)
	}
	bt, err := s.Read(ctx, events.EndOf(w0), 10)
	if err != nil || len(bt.Events) != 3 || bt.Forged != (events.Forged{}) {
		t.Fatalf("read: %+v %v", bt, err)
	}
	if len(bt.Spans) != 1 || bt.Spans[0].Walk != w1 || !bt.Spans[0].Span.Equal(spanOf(2)) {
		t.Errorf("spans read %v; want walk 1's alone", bt.Spans)
	}
	// Once per walk: on its first event only.
	entries, err := raw.XRange(ctx, s.stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var with []string
	for _, e := range entries {
		if w, ok := e.Values["w"].(string); ok {
			with = append(with, e.ID)
			if len(w) != spanFieldLen {
				t.Errorf("w of %s: %d bytes; want %d", e.ID, len(w), spanFieldLen)
			}
		}
	}
	if want := []string{streamID(events.Pos{Walk: w1})}; !slices.Equal(with, want) {
		t.Errorf("entries with a span: %v; want %v, the walk's first event", with, want)
	}
	if bt, _ := s.Read(ctx, events.Pos{Walk: w1}, 10); len(bt.Events) != 2 || len(bt.Spans) != 0 {
		t.Errorf("read after the walk's first event: %+v; want its second event and walk 2's, no span", bt)
	}
}

// The field w is signed on its own, bound to its event: an event whose w
// is altered, or taken from another event, does not verify; the event
// without w verifies as it did (a member of an earlier build, which
// ignores w, reads a newer member's events).
func TestStoreRefusesAForgedSpan(t *testing.T) {
	scriptForms(t, func(t *testing.T, f form) {
		ctx := context.Background()
		raw := f.raw(t)
		if err := flushAll(ctx, raw); err != nil {
			t.Fatal(err)
		}
		s := newStore(t, f.client(t), Config{Now: at(t0)})
		w0, w1, w2 := t0.UnixMilli(), t0.Add(time.Minute).UnixMilli(), t0.Add(2*time.Minute).UnixMilli()
		if _, err := s.Append(ctx, events.Walk{At: w0, Snapshot: snapOf(item(1, "A"))}); err != nil {
			t.Fatal(err)
		}
		for k, w := range []int64{w1, w2} {
			it := item(1, string(rune('B'+k)))
			if _, err := s.Append(ctx, events.Walk{Prev: w - int64(time.Minute/time.Millisecond), At: w,
				Changes: []events.Change{{Type: events.Updated, Item: it}}, Snapshot: snapOf(it), Span: spanOf(byte(3 + k))}); err != nil {
				t.Fatal(err)
			}
		}
		entries, err := raw.Do(ctx, "XRANGE", s.stream, "-", "+").Slice()
		if err != nil || len(entries) != 2 {
			t.Fatalf("entries %v %v", entries, err)
		}
		// with returns entry i with its w replaced by w (nil: removed).
		with := func(i int, w any) any {
			pair := entries[i].([]any)
			fields := slices.Clone(pair[1].([]any))
			for j := 0; j+1 < len(fields); j += 2 {
				if fields[j] == "w" {
					if w == nil {
						fields = slices.Delete(fields, j, j+2)
					} else {
						fields[j+1] = w
					}
					break
				}
			}
			return []any{pair[0], fields}
		}
		wOf := func(i int) string {
			fields := entries[i].([]any)[1].([]any)
			return fields[slices.Index(fields, any("w"))+1].(string)
		}
		if e, _, ok := s.entry(entries[0]); !ok || !e.span.Equal(spanOf(3)) {
			t.Fatalf("entry as written: %v, span %v; want it to verify with walk 1's span", ok, e.span)
		}
		altered := []byte(wOf(0))
		altered[0] ^= 1
		if _, _, ok := s.entry(with(0, string(altered))); ok {
			t.Error("an entry whose span was altered verifies")
		}
		if _, _, ok := s.entry(with(0, wOf(1))); ok {
			t.Error("an entry carrying another event's span verifies")
		}
		if e, _, ok := s.entry(with(0, nil)); !ok || e.span.IsValid() {
			t.Errorf("the entry without w: verifies %v, span %v; want it to verify, no span", ok, e.span)
		}
	})
}

// A fleet member delivering another member's walk links to it: the span
// the walking member's load carried reaches every member's copy.
func TestFleetMembersShareTheWalksSpan(t *testing.T) {
	scriptForms(t, func(t *testing.T, f form) {
		if err := flushAll(context.Background(), f.raw(t)); err != nil {
			t.Fatal(err)
		}
		now := t0
		clock := func() time.Time { return now }
		walker, other := newMember(t, f, clock), newMember(t, f, clock)
		props := func(name string) []mapping.Property {
			return []mapping.Property{{ID: "00000000-0000-4000-8000-000000000001", Name: name, Status: "active",
				Timezone: "Europe/Paris", CreatedAt: t0, UpdatedAt: t0}}
		}
		s0, s1 := upstream.SnapshotOf(props("A"), t0), upstream.SnapshotOf(props("A1"), t0.Add(time.Minute))
		walker.load(t, s0, true)
		other.load(t, s0, false)
		now = s1.LoadedAt
		walker.at = s1.LoadedAt
		_, _, _ = walker.walk(context.Background())
		ctx := trace.ContextWithSpanContext(context.Background(), spanOf(7))
		if _, err := walker.feed.Watch(func(context.Context) (*upstream.Snapshot, error) { return s1, nil })(ctx); err != nil {
			t.Fatal(err)
		}
		other.load(t, s1, false)
		for name, m := range map[string]*member{"the member that walked": walker, "another": other} {
			evs, _, err := m.feed.Read(context.Background(), "", false, 10, viewAll{})
			if err != nil || len(evs) != 1 || !evs[0].Walk.Equal(spanOf(7)) {
				t.Errorf("%s: %d events, %v, span %v; want the walk's", name, len(evs), err, evs)
			}
		}
	})
}

package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
)

// brand is n active properties, each named after version v: a new v
// changes every one of them.
func brand(n, v int) []mapping.Property {
	ps := make([]mapping.Property, n)
	for i := range ps {
		ps[i] = prop(i, fmt.Sprintf("Hotel %d v%d", i, v), "active")
	}
	return ps
}

// docs/contract.md section 25: asOf names the current snapshot or one it
// replaced, held for Hold, then 410; positions the feed never issued are
// ErrCursorUnknown.
func TestAsOfServesHeldSnapshots(t *testing.T) {
	c := &clock{t0}
	f := newFeed(t, c, Config{Hold: 10 * time.Minute})
	s1 := upstream.SnapshotOf(brand(5, 1), t0)
	var last *upstream.Snapshot
	walk := func(s *upstream.Snapshot) {
		t.Helper()
		if _, err := f.Watch(func(context.Context) (*upstream.Snapshot, error) { return s, nil })(context.Background()); err != nil {
			t.Fatal(err)
		}
		last = s
	}
	walk(s1)
	asOf := f.Next(s1)
	if !f.ValidAsOf(asOf) {
		t.Fatalf("a list's cursor %q is no valid asOf", asOf)
	}
	if got, err := f.AsOf(context.Background(), asOf, time.Time{}); err != nil || got != s1 {
		t.Fatalf("asOf the current snapshot: %v %v", got, err)
	}
	// The PMS changes one property and removes another.
	ps := brand(5, 1)
	ps[1].Name = "Renamed"
	c.now = t0.Add(time.Minute)
	walk(upstream.SnapshotAfter(last, ps[:4], c.now))
	got, err := f.AsOf(context.Background(), asOf, time.Time{})
	if err != nil || len(got.Active) != 5 || got.LoadedAt != s1.LoadedAt {
		t.Fatalf("asOf the replaced snapshot: %v %v", got, err)
	}
	for i, it := range got.Active {
		if it != s1.Active[i] {
			t.Errorf("held item %d is not the snapshot's own", i)
		}
		if cur, ok := last.Get(it.ID); ok && i != 1 && cur != it {
			t.Errorf("unchanged item %s is held twice: the held snapshot's and the current one's", it.ID)
		}
	}
	if n, bytes := f.HeldStats(); n != 1 || bytes <= 0 || bytes >= last.Bytes() {
		t.Errorf("held %d snapshots, %d bytes; want 1, its references and two old versions (current %d)", n, bytes, last.Bytes())
	}

	for name, cursor := range map[string]string{
		"past the last walk": string(appendCursor(nil, 'l', EndOf(t0.Add(2*time.Minute).UnixMilli()))),
		"a minute ahead":     string(appendCursor(nil, 'l', EndOf(c.now.Add(time.Second).UnixMilli()))),
		"no walk's time":     string(appendCursor(nil, 'l', EndOf(t0.Add(30*time.Second).UnixMilli()))),
		"an event's id":      string(appendCursor(nil, 'l', Pos{Walk: t0.Add(time.Minute).UnixMilli(), Seq: 0})),
		"another mode's":     string(appendCursor(nil, 't', EndOf(t0.UnixMilli()))),
		"not a cursor":       "evt_bogus",
	} {
		if _, err := f.AsOf(context.Background(), cursor, time.Time{}); !errors.Is(err, ErrCursorUnknown) {
			t.Errorf("asOf %s: %v; want ErrCursorUnknown", name, err)
		}
	}
	before := string(appendCursor(nil, 'l', EndOf(t0.Add(-time.Hour).UnixMilli())))
	if _, err := f.AsOf(context.Background(), before, time.Time{}); !errors.Is(err, ErrSnapshotExpired) {
		t.Errorf("asOf a walk before this feed: %v; want ErrSnapshotExpired", err)
	}
	// The hold runs from the replacement: 10 minutes later it is gone.
	c.now = t0.Add(time.Minute + 10*time.Minute)
	if _, err := f.AsOf(context.Background(), asOf, time.Time{}); !errors.Is(err, ErrSnapshotExpired) {
		t.Errorf("asOf after the hold: %v; want ErrSnapshotExpired", err)
	}
}

// Held snapshots together cost at most the current one: walks that change
// every property leave the newest replaced one held and drop the older
// early.
func TestHeldSnapshotsBoundedByBytes(t *testing.T) {
	c := &clock{t0}
	f := newFeed(t, c, Config{})
	var prev *upstream.Snapshot
	var cursors []string
	for v := range 6 {
		c.now = t0.Add(time.Duration(v) * time.Minute)
		s := upstream.SnapshotAfter(prev, brand(200, v), c.now)
		if _, err := f.Watch(func(context.Context) (*upstream.Snapshot, error) { return s, nil })(context.Background()); err != nil {
			t.Fatal(err)
		}
		cursors = append(cursors, f.Next(s))
		prev = s
	}
	n, bytes := f.HeldStats()
	if n < 1 || n > 2 || bytes > prev.Bytes() {
		t.Errorf("held %d snapshots of %d bytes; want one or two within the current snapshot's %d", n, bytes, prev.Bytes())
	}
	if _, err := f.AsOf(context.Background(), cursors[4], time.Time{}); err != nil {
		t.Errorf("the newest replaced snapshot: %v; want held", err)
	}
	if _, err := f.AsOf(context.Background(), cursors[0], time.Time{}); !errors.Is(err, ErrSnapshotExpired) {
		t.Errorf("the oldest: %v; want dropped early (ErrSnapshotExpired)", err)
	}
	// Walks that change nothing cost their references only: all held.
	for v := range 6 {
		c.now = t0.Add(time.Duration(10+v) * time.Minute)
		s := upstream.SnapshotAfter(prev, brand(200, 5), c.now)
		_, _ = f.Watch(func(context.Context) (*upstream.Snapshot, error) { return s, nil })(context.Background())
		prev = s
	}
	if n, bytes := f.HeldStats(); n < 6 || bytes > int64(n)*200*8+prev.Bytes()/2 {
		t.Errorf("unchanged walks: held %d snapshots of %d bytes; want every one, about their references", n, bytes)
	}
}

// docs/contract.md section 25: after positions no walk made, or past the
// last walk, are ErrCursorUnknown; an event position no event has too.
func TestAfterNeverIssuedIsRefused(t *testing.T) {
	c := &clock{t0}
	f := newFeed(t, c, Config{})
	s1 := upstream.SnapshotOf(brand(3, 1), t0)
	c.now = t0.Add(time.Minute)
	s2 := upstream.SnapshotAfter(s1, brand(3, 2), c.now)
	load := f.Watch(walks(s1, s2))
	_, _ = load(context.Background())
	_, _ = load(context.Background())
	es, _, err := page(t, f, f.Next(s1), 50, all{})
	if err != nil || len(es) != 3 {
		t.Fatalf("events of the second walk: %v %v", es, err)
	}
	for _, after := range []string{es[0].ID, es[2].ID, f.Next(s1), f.Next(s2)} {
		if _, _, err := page(t, f, after, 50, all{}); err != nil {
			t.Errorf("after %s (issued): %v", after, err)
		}
	}
	for name, after := range map[string]string{
		"a second ahead": string(appendCursor(nil, 'l', EndOf(c.now.Add(time.Second).UnixMilli()))),
		"no walk's time": string(appendCursor(nil, 'l', EndOf(t0.Add(time.Second).UnixMilli()))),
		"no such event":  string(appendCursor(nil, 'l', Pos{Walk: c.now.UnixMilli(), Seq: 7})),
		"between walks":  string(appendCursor(nil, 'l', Pos{Walk: t0.Add(30 * time.Second).UnixMilli(), Seq: 0})),
	} {
		if _, _, err := page(t, f, after, 50, all{}); !errors.Is(err, ErrCursorUnknown) {
			t.Errorf("after %s: %v; want ErrCursorUnknown", name, err)
		}
	}
}

// The held snapshots' instruments under the names docs/observability.md
// gives: how many, and what they cost.
func TestHeldMetrics(t *testing.T) {
	tel, err := observability.New(context.Background(), observability.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	c := &clock{t0}
	f := newFeed(t, c, Config{Meter: tel.Meter()})
	s1 := upstream.SnapshotOf(brand(10, 1), t0)
	load := f.Watch(walks(s1, upstream.SnapshotAfter(s1, brand(10, 2), t0.Add(time.Minute))))
	_, _ = load(context.Background())
	_, _ = load(context.Background())
	fams := testkit.Scrape(t, tel.MetricsHandler())
	live := map[string]string{"pms": "live"}
	if n := testkit.Series(t, fams, "partner_edge_list_held", live).GetGauge().GetValue(); n != 1 {
		t.Errorf("partner_edge_list_held = %v, want 1", n)
	}
	_, bytes := f.HeldStats()
	if b := testkit.Series(t, fams, "partner_edge_list_held_memory_bytes", live).GetGauge().GetValue(); b != float64(bytes) || b <= 0 {
		t.Errorf("partner_edge_list_held_memory_bytes = %v, want %d", b, bytes)
	}
}

// A fleet member whose copy of the shared feed is behind takes the
// cursors another member issued a moment ago (it reads the feed once),
// refuses those past the fleet's last walk, and answers 410 for a
// listing of a snapshot it never held.
func TestFleetMemberTakesAnotherMembersCursors(t *testing.T) {
	c := &clock{t0}
	sh := &memShared{}
	a, b := newMember(t, c, sh), newMember(t, c, sh)
	s1 := upstream.SnapshotOf(brand(4, 1), t0)
	a.leads(t, s1)
	b.takes(t, s1)
	c.now = t0.Add(time.Minute)
	s2 := upstream.SnapshotAfter(s1, brand(4, 2), c.now)
	a.leads(t, s2) // b has not loaded s2 nor read the feed since
	es, _, err := page(t, a.f, a.f.Next(s1), 50, all{})
	if err != nil || len(es) != 4 {
		t.Fatalf("a's events: %d %v; want 4", len(es), err)
	}
	for _, after := range []string{es[3].ID, a.f.Next(s2)} {
		if _, _, err := page(t, b.f, after, 50, all{}); err != nil {
			t.Errorf("b, after a's cursor %s: %v; want served", after, err)
		}
	}
	if _, err := b.f.AsOf(context.Background(), a.f.Next(s2), time.Time{}); !errors.Is(err, ErrSnapshotExpired) {
		t.Errorf("b, asOf a snapshot it never held: %v; want ErrSnapshotExpired", err)
	}
	future := string(appendCursor(nil, 'l', EndOf(c.now.Add(time.Second).UnixMilli())))
	if _, _, err := page(t, b.f, future, 50, all{}); !errors.Is(err, ErrCursorUnknown) {
		t.Errorf("b, after a position past the fleet's last walk: %v; want ErrCursorUnknown", err)
	}
	if _, err := b.f.AsOf(context.Background(), future, time.Time{}); !errors.Is(err, ErrCursorUnknown) {
		t.Errorf("b, asOf past the fleet's last walk: %v; want ErrCursorUnknown", err)
	}
}

// BenchmarkHoldReplaceBrandScale is what holding costs a walk at brand
// scale (50,000 properties, 30 held snapshots: 15 minutes of walks 30 s
// apart, 50 properties changing a walk): one replacement, with the
// reckoning of what the held snapshots cost.
func BenchmarkHoldReplaceBrandScale(b *testing.B) {
	const n, held = 50_000, 30
	props := brand(n, 0)
	var prev *upstream.Snapshot
	var snaps []*upstream.Snapshot
	for w := range held + 2 {
		for i := range 50 {
			props[(w*50+i)%n].Name = fmt.Sprintf("Hotel %d w%d", i, w)
		}
		prev = upstream.SnapshotAfter(prev, props, t0.Add(time.Duration(w)*30*time.Second))
		snaps = append(snaps, prev)
	}
	h := &holds{hold: time.Hour, log: slog.New(slog.DiscardHandler), mode: "live"}
	for _, s := range snaps[:held+1] {
		h.replace(s, s.LoadedAt)
	}
	last, next := snaps[held], snaps[held+1]
	b.ReportAllocs()
	for b.Loop() {
		h.replace(next, next.LoadedAt) // held: 31 then trimmed by time below
		b.StopTimer()
		h.mu.Lock()
		h.cur, h.curWalk = last, last.LoadedAt.UnixMilli()
		h.held = h.held[:len(h.held)-1]
		h.publish()
		h.mu.Unlock()
		b.StartTimer()
	}
	n2, bytes := h.stats()
	b.ReportMetric(float64(n2), "held")
	b.ReportMetric(float64(bytes)/1e6, "held-MB")
	b.ReportMetric(float64(next.Bytes())/1e6, "current-MB")
}

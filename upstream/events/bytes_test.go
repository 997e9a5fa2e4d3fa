package events

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// brandWalks are n versions of a brand of the simulator's hotels, every
// property renamed in each, a minute apart from t0: a PMS that changes
// everything on every walk.
func brandWalks(t testing.TB, hotels, n int) []*upstream.Snapshot {
	t.Helper()
	sim := pmsim.New(pmsim.Config{Seed: 1, Brands: 1, HotelsPerBrand: hotels})
	opts := mapping.Options{Brand: "aurora", Zones: &mapping.ZoneCache{}}
	var props []mapping.Property
	for _, r := range sim.Records("aurora") {
		if p, err := mapping.MapRaw(r, opts); err == nil {
			props = append(props, p)
		}
	}
	out := make([]*upstream.Snapshot, n)
	for k := range out {
		for i := range props {
			props[i].Name = fmt.Sprintf("%s %d", props[i].Name[:min(len(props[i].Name), 40)], k)
		}
		out[k] = upstream.SnapshotOf(props, t0.Add(time.Duration(k)*time.Minute))
	}
	return out
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestLogBytesMatchTheHeap holds EDGE_EVENTS_MAX_BYTES to what the events
// really take: the feed's own count of the bytes it holds is within a
// third of the heap they take (measured with the simulator's hotels, every
// one changing on every walk), and at least what they take less a tenth,
// so the bound is a bound on memory. The per-event figure it logs is the
// basis of docs/operations.md's sizing.
func TestLogBytesMatchTheHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	const hotels, n = 4000, 9
	snaps := brandWalks(t, hotels, n)
	// At the bound too: a walk whose oldest events the bound dropped
	// keeps only the rest of its bytes (a walk's events share one buffer).
	for _, bound := range []float64{0, 1.2} {
		t.Run(fmt.Sprintf("bound of %.1f walks", bound), func(t *testing.T) {
			logBytesMatchTheHeap(t, snaps, bound)
		})
	}
	runtime.KeepAlive(snaps)
}

// logBytesMatchTheHeap is TestLogBytesMatchTheHeap with a bound of bound
// walks' events (0: none).
func logBytesMatchTheHeap(t *testing.T, snaps []*upstream.Snapshot, bound float64) {
	n := len(snaps)
	c := &clock{t0}
	maxBytes := int64(1 << 40)
	if bound > 0 {
		probe := newFeed(t, c, Config{})
		load := probe.Watch(walks(snaps[:2]...))
		_, _ = load(context.Background())
		_, _ = load(context.Background())
		maxBytes = int64(bound * float64(probe.log.held()))
		probe.Close()
	}
	f := newFeed(t, c, Config{MaxBytes: maxBytes})
	before := heap()
	load := f.Watch(walks(snaps...))
	for k := range snaps {
		c.now = snaps[k].LoadedAt
		if _, err := load(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	after := heap()
	events, _ := f.log.stats()
	if want := (n - 1) * len(snaps[0].Loaded()); bound == 0 && events != want {
		t.Fatalf("%d events; want %d", events, want)
	}
	// The feed now also holds the last snapshot as its base, and the
	// snapshots are held by the test all along: the growth is the events.
	grown := int64(after) - int64(before)
	held := f.log.held()
	t.Logf("%d events: %d bytes of heap (%d an event), %d counted (%d an event)",
		events, grown, grown/int64(events), held, held/int64(events))
	if float64(held) < 0.9*float64(grown) || float64(held) > 1.3*float64(grown) {
		t.Errorf("the feed counts %d bytes for events that take %d of heap: want within -10%%/+30%%", held, grown)
	}
}

// TestFeedBoundedByBytes: past EDGE_EVENTS_MAX_BYTES the oldest events go
// first, a cursor before them answers ErrCursorExpired, and what is kept
// stays under the bound.
func TestFeedBoundedByBytes(t *testing.T) {
	snaps := brandWalks(t, 50, 6)
	c := &clock{t0}
	probe := newFeed(t, c, Config{})
	load := probe.Watch(walks(snaps[:2]...))
	_, _ = load(context.Background())
	_, _ = load(context.Background())
	walkBytes := probe.log.held() // one walk's events
	if walkBytes == 0 {
		t.Fatal("no events counted")
	}

	bound := 2*walkBytes + walkBytes/2 // two walks and a half
	f := newFeed(t, c, Config{MaxBytes: bound})
	load = f.Watch(walks(snaps...))
	first, _ := load(context.Background())
	cursor := f.Next(first)
	for range snaps[1:] {
		if _, err := load(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if held := f.log.held(); held > bound || held < 2*walkBytes {
		t.Errorf("holds %d bytes; want at most the bound %d and at least two walks' %d", held, bound, 2*walkBytes)
	}
	if _, _, err := page(t, f, cursor, 50, all{}); !errors.Is(err, ErrCursorExpired) {
		t.Errorf("a cursor before the dropped events: %v; want ErrCursorExpired", err)
	}
	es, _, err := page(t, f, "", 100, all{})
	if err != nil {
		t.Fatal(err)
	}
	// The newest walk is whole, and the oldest kept is older than it.
	if n := len(es); n < 50*2 || n > 50*3 {
		t.Errorf("kept %d events; want between two and three walks' (50 each)", n)
	}
	if es[len(es)-1].OccurredAt != snaps[5].LoadedAt.UTC().Format("2006-01-02T15:04:05.000Z") {
		t.Errorf("newest event at %s; want the last walk's", es[len(es)-1].OccurredAt)
	}
}

// A walk's events are costed before they are encoded, exactly as the log
// will count them, in a buffer that never grows; and reserving them drops
// the events they will replace first, so at the bound a walk's events and
// the ones they replace are never in memory together (docs/operations.md,
// "Sizing the feed").
func TestWalkMakesRoomBeforeItIsEncoded(t *testing.T) {
	snaps := brandWalks(t, 50, 4)
	changes := Diff(snaps[0], snaps[1])
	walk := snaps[1].LoadedAt.UnixMilli()
	bt, cost := newBatch(walk, changes)
	size := cap(bt.buf)
	for k, c := range changes {
		bt.add('l', Pos{Walk: walk, Seq: uint32(k)}, c.Type, c.Item.ID, c.Item.JSON)
	}
	var counted int64
	for _, e := range bt.entries() {
		counted += e.cost()
	}
	if counted != cost || cap(bt.buf) != size || len(bt.buf) > size {
		t.Fatalf("costed %d, counted %d; buffer %d of %d sized; want the same cost and no growth", cost, counted, len(bt.buf), size)
	}

	c := &clock{t0}
	f := newFeed(t, c, Config{MaxBytes: 2*cost + cost/2}) // two walks and a half
	load := f.Watch(walks(snaps...))
	for range snaps[:3] {
		if _, err := load(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	before := f.log.held()
	f.log.reserve(len(changes), cost, c.Now())
	if after := f.log.held(); after+cost > f.cfg.MaxBytes || after >= before {
		t.Errorf("held %d, then %d after reserving %d under a bound of %d: want room made first", before, after, cost, f.cfg.MaxBytes)
	}
}

// A fleet member's copy of the feed counts what it holds after the shared
// feed's floor passes some of it (forget) or the feed starts again
// (restart): before, both kept counting the dropped events, so the byte
// bound, over for good, dropped every event read after them and the
// member's copy stayed empty (found by bench/feedmem's fleet run at
// brand scale: partner_edge_events_length 0 beside 64 MiB counted).
func TestForgetAndRestartCountWhatIsLeft(t *testing.T) {
	snaps := brandWalks(t, 50, 4)
	c := &clock{t0}
	probe := newFeed(t, c, Config{})
	load := probe.Watch(walks(snaps[:2]...))
	_, _ = load(context.Background())
	_, _ = load(context.Background())
	walkBytes := probe.log.held()

	f := newFeed(t, c, Config{MaxBytes: 2*walkBytes + walkBytes/2})
	load = f.Watch(walks(snaps...))
	for range snaps[:3] {
		if _, err := load(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	sum := func() (n int64) {
		f.log.mu.RLock()
		defer f.log.mu.RUnlock()
		for i := range f.log.entries {
			n += f.log.entries[i].cost()
		}
		return n
	}
	f.log.forget(Pos{Walk: snaps[1].LoadedAt.UnixMilli(), Seq: 10}) // the shared floor inside a walk
	if held, want := f.log.held(), sum(); held != want {
		t.Fatalf("after forget: counts %d bytes for entries that cost %d", held, want)
	}
	if _, err := load(context.Background()); err != nil { // one more walk: kept whole
		t.Fatal(err)
	}
	if n, _ := f.log.stats(); n < 50 {
		t.Errorf("after forget, the next walk's events: %d kept; want its 50 at least", n)
	}
	f.log.restart(EndOf(snaps[3].LoadedAt.UnixMilli()))
	if held := f.log.held(); held != 0 {
		t.Errorf("after restart: counts %d bytes for an empty log", held)
	}
}

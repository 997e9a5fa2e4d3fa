package boltevents

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// BenchmarkAppendBrandScale is what a walk costs EDGE_DATA_DIR at brand
// scale in the worst case: 50,000 of the simulator's hotels, every one
// changed since the walk before, appended in one transaction (the events,
// the new base, compressed, and the walk's span) and read back as the
// feed does after it.
// It reports the bytes the file keeps per walk; B/op is the heap a walk's
// write and read allocate (docs/operations.md, "Sizing the feed"):
//
//	go test -run '^$' -bench AppendBrandScale -benchtime 5x ./upstream/events/boltevents/
func BenchmarkAppendBrandScale(b *testing.B) {
	sim := pmsim.New(pmsim.Config{Seed: 1, Brands: 1, HotelsPerBrand: 50_000})
	opts := mapping.Options{Brand: "aurora", Zones: &mapping.ZoneCache{}}
	var props []mapping.Property
	for _, r := range sim.Records("aurora") {
		if p, err := mapping.MapRaw(r, opts); err == nil {
			props = append(props, p)
		}
	}
	versions := [2]*upstream.Snapshot{}
	for k := range versions {
		for i := range props {
			props[i].Name = fmt.Sprintf("Hotel %d v%d", i, k)
		}
		versions[k] = upstream.SnapshotOf(props, time.Time{})
	}
	changes := events.Diff(versions[0], versions[1])
	back := events.Diff(versions[1], versions[0])
	db, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	// The walks, a millisecond apart, start on the tests' day, which the
	// store's clock starts on and moves from with the wall clock.
	st, err := db.Feed(Config{Brand: "aurora", Mode: "live", MaxBytes: 1 << 40, Now: testkit.From(t0)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	at := t0.UnixMilli()
	if _, err := st.Append(ctx, events.Walk{At: at, Snapshot: versions[0]}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		w := events.Walk{Prev: at, At: at + 1, Snapshot: versions[(i+1)%2], Changes: changes, Span: spanOf(byte(i))}
		if i%2 == 1 {
			w.Changes = back
		}
		if _, err := st.Append(ctx, w); err != nil {
			b.Fatal(err)
		}
		bt, err := st.Read(ctx, events.Pos{Walk: at, Seq: ^uint32(0)}, 1000)
		if err != nil || len(bt.Events) != len(w.Changes) || len(bt.Spans) != 1 {
			b.Fatalf("read %d events and %d spans, %v; want %d and the walk's", len(bt.Events), len(bt.Spans), err, len(w.Changes))
		}
		at++
	}
	b.StopTimer()
	var walkBytes, baseBytes int
	_ = db.bolt.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(st.name)
		walkBytes = int(u64(bk.Get(keyBytes))) / b.N
		baseBytes = len(bk.Get(keyBase))
		return nil
	})
	b.ReportMetric(float64(walkBytes), "event-bytes/walk")
	b.ReportMetric(float64(baseBytes), "base-bytes")
	b.ReportMetric(float64(len(changes)), "events/walk")
}

// BenchmarkBrandScaleHeap is the heap of a single edge's feed at brand
// scale in the worst case, each iteration one walk: 50,000 of the
// simulator's hotels (two versions, so that every property changes on
// every walk; both held all along, as the served snapshot and the one a
// walk builds), the feed at its default bounds (EDGE_EVENTS_MAX_BYTES
// 64 MiB) in memory and in EDGE_DATA_DIR. It reports the heap's peak
// (sampled every few milliseconds) and its live size after the last walk
// (docs/operations.md, "Sizing the feed"):
//
//	go test -run '^$' -bench BrandScaleHeap -benchtime 8x ./upstream/events/boltevents/
func BenchmarkBrandScaleHeap(b *testing.B) {
	sim := pmsim.New(pmsim.Config{Seed: 1, Brands: 1, HotelsPerBrand: 50_000})
	opts := mapping.Options{Brand: "aurora", Zones: &mapping.ZoneCache{}}
	var props []mapping.Property
	for _, r := range sim.Records("aurora") {
		if p, err := mapping.MapRaw(r, opts); err == nil {
			props = append(props, p)
		}
	}
	sim = nil
	var items [2][]*upstream.Item
	for k := range items {
		for i := range props {
			props[i].Name = fmt.Sprintf("Hotel %d v%d", i, k)
		}
		items[k] = upstream.SnapshotOf(props, time.Time{}).Loaded()
	}
	props = nil
	db, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	clock := func() time.Time { return now }
	st, err := db.Feed(Config{Brand: "aurora", Mode: "live", Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	f, err := events.New(events.Config{Mode: "live", Shared: st, Now: clock})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() { // sample the heap until done
		defer close(sampled)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	b.ResetTimer()
	for i := range b.N + 1 {
		now = now.Add(30 * time.Second)
		snap := upstream.NewSnapshot(items[i%2], now)
		if _, err := f.Watch(func(context.Context) (*upstream.Snapshot, error) { return snap, nil })(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	close(done)
	<-sampled
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "live-heap-MiB")
	runtime.KeepAlive(items)
}

//go:build linux || darwin

package pms

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// BenchmarkGetHotelMiss is the PMS side of a cache miss with
// EDGE_CACHE_TTL=0 (bench/README.md, the miss row): one GetHotel over a
// reused http connection, another id each time, through the default
// transport (the idle guard, the retry decision, the boundary). It
// reports the process's CPU per get (cpu-ns/op). With PMS_BENCH_URL set to
// a simulator run apart (go run ./cmd/pmsim --addr 127.0.0.1:0 --brands 1
// --hotels 64), that CPU is the client's alone; without, the simulator
// runs in process and its CPU is counted too.
func BenchmarkGetHotelMiss(b *testing.B) {
	base := os.Getenv("PMS_BENCH_URL")
	if base == "" {
		srv := httptest.NewServer(pmsim.New(pmsim.Config{Brands: 1, HotelsPerBrand: 64, Seed: 3}))
		b.Cleanup(srv.Close)
		base = srv.URL
	}
	c, err := NewClient(ClientConfig{BaseURL: base, Now: testkit.From(testkit.Epoch)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.CloseIdleConnections)
	ctx := context.Background()
	var ids []string
	if err := c.WalkHotels(ctx, "aurora", func(rec []byte) error {
		var r struct {
			ID string `json:"hotel_id"`
		}
		if err := json.Unmarshal(rec, &r); err != nil {
			return err
		}
		ids = append(ids, r.ID)
		return nil
	}); err != nil || len(ids) == 0 {
		b.Fatalf("%d ids, %v", len(ids), err)
	}
	b.ReportAllocs()
	start := cpuTime()
	i := 0
	for b.Loop() {
		if _, err := c.GetHotel(ctx, "aurora", ids[i%len(ids)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

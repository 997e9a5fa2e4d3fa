package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// What Redis adds to a request (docs/scaling.md, "Capacity"): the
// edge answering a cached list with a rate-limited key and the failed-auth
// throttle on (a peek and a take per request), its limiter in-process or
// over Redis (redislimit on a real redis-server over loopback: a request
// spends units taken ahead of need, so Redis sees about ten calls a second,
// not two per request as before the quotas' lease, docs/contract.md section 16).
//
//	go test -run '^$' -bench FleetLimiter -benchmem ./cmd/edge/
//
// Reported per request: ns/op (wall), cpu-ns/op (this process's user+system
// CPU, redis-server's not included), p99-ns (serial requests, so one
// request's latency). FleetLimiterRatio alternates blocks of both and
// reports redis/local for each: the figures to quote on a noisy machine.
func BenchmarkFleetLimiterLocal(b *testing.B) { benchLimiter(b, false) }

func BenchmarkFleetLimiterRedis(b *testing.B) { benchLimiter(b, true) }

// The same under parallel load (GOMAXPROCS goroutines, go-redis's pool):
// cpu-ns/op is the CPU a request costs when the cores are busy, the figure
// for capacity per core.
func BenchmarkFleetLimiterParallelLocal(b *testing.B) { benchParallel(b, false) }

func BenchmarkFleetLimiterParallelRedis(b *testing.B) { benchParallel(b, true) }

func benchParallel(b *testing.B, redis bool) {
	h, req := benchEdge(b, redis)
	b.ReportAllocs()
	b.SetParallelism(4)
	cpu0 := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &discardWriter{h: http.Header{}}
		for pb.Next() {
			serve(h, w, req)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

func benchLimiter(b *testing.B, redis bool) {
	h, req := benchEdge(b, redis)
	w := &discardWriter{h: http.Header{}}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		serve(h, w, req)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(p99(lat)), "p99-ns")
}

func BenchmarkFleetLimiterRatio(b *testing.B) {
	hl, req := benchEdge(b, false)
	hr, _ := benchEdge(b, true)
	w := &discardWriter{h: http.Header{}}
	const block = 64
	var latL, latR []time.Duration
	var cpuL, cpuR time.Duration
	b.ResetTimer()
	for range b.N {
		for _, side := range []struct {
			h   http.Handler
			lat *[]time.Duration
			cpu *time.Duration
		}{{hl, &latL, &cpuL}, {hr, &latR, &cpuR}} {
			c0 := cpuTime()
			for range block {
				t0 := time.Now()
				serve(side.h, w, req)
				*side.lat = append(*side.lat, time.Since(t0))
			}
			*side.cpu += cpuTime() - c0
		}
	}
	b.StopTimer()
	n := float64(b.N * block)
	b.ReportMetric(float64(cpuL)/n, "local-cpu-ns/req")
	b.ReportMetric(float64(cpuR)/n, "redis-cpu-ns/req")
	b.ReportMetric(float64(cpuR)/float64(cpuL), "cpu-redis/local")
	b.ReportMetric(float64(p99(latL)), "local-p99-ns")
	b.ReportMetric(float64(p99(latR)), "redis-p99-ns")
	b.ReportMetric(float64(p99(latR))/float64(p99(latL)), "p99-redis/local")
}

// benchEdge is the edge as run builds it (simulator PMS, cache warm), with
// a key limited to a quota it never reaches.
func benchEdge(b *testing.B, redis bool) (http.Handler, *http.Request) {
	b.Helper()
	pms := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 5, Token: "pms-secret-token"}))
	b.Cleanup(pms.Close)
	token, rec, err := keys.Mint(strings.NewReader(strings.Repeat("bench", 100)), "aurora", keys.ModeLive, nil)
	if err != nil {
		b.Fatal(err)
	}
	rec.RateLimit = &keys.RateLimit{PerSecond: 100000, Burst: 100000}
	store := keystest.Open(b, rec)
	ctx := context.Background()
	tel := quietTelemetry(b)
	log := slog.New(slog.DiscardHandler)
	cfg := settings{Brand: "aurora", PMSToken: "pms-secret-token", PMSTimeout: 5 * time.Second,
		PMSAttempt: 2 * time.Second, CacheTTL: time.Hour, CacheStale: time.Hour}
	var fm *member
	if redis {
		srv := redistest.Start(b)
		cfg.Redis.URL, cfg.FleetSecret = srv.URL(), []byte(testFleetSecret)
		if fm, err = joinFleet(ctx, cfg, log, tel); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(fm.close)
	}
	cat, err := newCatalog(cfg, pms.URL, keys.ModeLive, "bench", log, tel, fm, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(cat.Close)
	h := edge.NewServer(edge.Config{Brand: "aurora", Logger: log, AuthFailLimit: 20, Limiter: fm.limiter()},
		store, cat, nil)
	req, _ := http.NewRequest("GET", "http://edge.test/v1/properties?perPage=10", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("User-Agent", "bench/1.0")
	req.RemoteAddr = "192.0.2.10:40000"
	w := &discardWriter{h: http.Header{}}
	if serve(h, w, req); w.code != http.StatusOK || w.h.Get("RateLimit") == "" {
		b.Fatalf("setup: %d, RateLimit %q", w.code, w.h.Get("RateLimit"))
	}
	if redis && fm.client.State() != upstream.BreakerClosed {
		b.Fatal("setup: Redis not in use")
	}
	return h, req
}

func serve(h http.Handler, w *discardWriter, req *http.Request) {
	clear(w.h)
	w.code = 0
	h.ServeHTTP(w, req)
}

// discardWriter is a reusable ResponseWriter that keeps only the status
// and the headers.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return len(p), nil
}
func (w *discardWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)*99/100]
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

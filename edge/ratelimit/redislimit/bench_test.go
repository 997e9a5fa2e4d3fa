package redislimit

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// One busy key's requests, in parallel, on a real redis-server: the cost
// of a decision from the lease, and Redis round trips per request
// (calls/op: the refill's and the request path's).
//
//	go test -run '^$' -bench LeaseAllowN -benchtime 200000x ./edge/ratelimit/redislimit
func BenchmarkLeaseAllowN(b *testing.B) {
	srv := redistest.Start(b)
	fc, err := redisconn.New(redisconn.Config{URL: srv.URL(), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Guard: redisconn.GuardConfig{CallTimeout: 5 * time.Second}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = fc.Close() })
	c := &countingClient{Client: fc}
	l := New(Config{Client: c, Brand: "bench"})
	b.Cleanup(l.Close)
	key, lim := ratelimit.Key{Kind: ratelimit.APIKey, ID: "key_1"}, ratelimit.Limit{PerSecond: 1e6, Burst: 1e6}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if d, err := l.AllowN(context.Background(), key, lim, 1); err != nil || !d.Allowed {
				b.Errorf("refused below the quota: %+v, %v", d, err)
				return
			}
		}
	})
	b.ReportMetric(float64(c.calls.Load())/float64(b.N), "calls/op")
}

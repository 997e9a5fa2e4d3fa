package edge_test

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// BenchmarkCachedListAsOf alternates blocks of a list page of 50 without
// asOf and the same page with asOf (docs/contract.md section 25: a page
// pinned to a snapshot costs within 5% of one that is not), for the key
// of every property and a granted key, and reports the ratio asof/plain.
// "current" pins the page to the snapshot being served (the common case:
// a listing read within one walk); "held" to one a later walk replaced,
// served item by item from the held snapshot's references.
func BenchmarkCachedListAsOf(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	first, err := env.cache.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	held := env.feed.Next(first)
	env.eventsAfter(b) // a second walk: the first snapshot is now held
	cur, err := env.cache.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	current := env.feed.Next(cur)
	for _, tc := range []struct{ name, token, asOf string }{
		{"current/all", env.liveToken, current}, {"current/granted", env.grantedToken, current},
		{"held/all", env.liveToken, held}, {"held/granted", env.grantedToken, held},
	} {
		b.Run(tc.name, func(b *testing.B) {
			plain, pinned := env.request(listTarget, tc.token), env.request(listTarget+"&asOf="+tc.asOf, tc.token)
			warm(b, env.handler, plain, http.StatusOK)
			warm(b, env.handler, pinned, http.StatusOK)
			const block = 64
			w := newBenchWriter()
			var tPlain, tPinned time.Duration
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				for range block {
					w.reset()
					env.handler.ServeHTTP(w, plain)
				}
				t1 := time.Now()
				for range block {
					w.reset()
					env.handler.ServeHTTP(w, pinned)
				}
				tPlain, tPinned = tPlain+t1.Sub(t0), tPinned+time.Since(t1)
				n += block
				if w.status != http.StatusOK {
					b.Fatalf("status %d", w.status)
				}
			}
			b.ReportMetric(float64(tPlain.Nanoseconds())/float64(n), "plain-ns/req")
			b.ReportMetric(float64(tPinned.Nanoseconds())/float64(n), "asof-ns/req")
			b.ReportMetric(float64(tPinned)/float64(tPlain), "asof/plain")
		})
	}
}

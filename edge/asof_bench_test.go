package edge_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// BenchmarkCachedListAsOf alternates blocks of a list page of 50 without
// asOf and the same page with asOf (docs/contract.md section 25: a page
// pinned to a snapshot costs within 5% of one that is not), for the key
// of every property and a granted key, and reports the ratio asof/plain.
// "current" pins the page to the snapshot being served (the common case:
// a listing read within one walk); "held-unchanged" to one a later walk
// replaced finding nothing changed (its pages are runs of the current
// snapshot's joined JSON); "held-changed" to one whose every property
// changed since (served item by item from its references: the worst
// case). The blocks'
// order alternates, and asof/plain-median is the median of the ratios of
// each pair of blocks: the figure to quote on a machine others share.
func BenchmarkCachedListAsOf(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	snapshot := func() *upstream.Snapshot {
		s, err := env.cache.Snapshot(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	changed := env.eventsAfter(b) // a second walk renamed every property: the first is held, all changed
	current := env.feed.Next(snapshot())
	type scenario struct{ name, token, asOf string }
	phases := [][]scenario{
		{{"current/all", env.liveToken, current}, {"current/granted", env.grantedToken, current},
			{"held-changed/all", env.liveToken, changed}, {"held-changed/granted", env.grantedToken, changed}},
		// A third walk that finds nothing changed: the second is held,
		// every property shared with the current snapshot.
		{{"held-unchanged/all", env.liveToken, current}, {"held-unchanged/granted", env.grantedToken, current}},
	}
	for phase, tcs := range phases {
		if phase == 1 {
			env.ahead.Add(int64(2 * time.Hour))
			if next := env.feed.Next(snapshot()); next == current {
				b.Fatal("no third walk")
			}
		}
		for _, tc := range tcs {
			bench(b, env, tc.name, tc.token, tc.asOf)
		}
	}
}

// bench is one scenario of BenchmarkCachedListAsOf.
func bench(b *testing.B, env *benchEnv, name, token, asOf string) {
	tc := struct{ name, token, asOf string }{name, token, asOf}
	b.Run(tc.name, func(b *testing.B) {
		plain, pinned := env.request(listTarget, tc.token), env.request(listTarget+"&asOf="+tc.asOf, tc.token)
		warm(b, env.handler, plain, http.StatusOK)
		warm(b, env.handler, pinned, http.StatusOK)
		const block = 64
		w := newBenchWriter()
		var tPlain, tPinned time.Duration
		n := 0
		b.ReportAllocs()
		serve := func(r *http.Request) time.Duration {
			t0 := time.Now()
			for range block {
				w.reset()
				env.handler.ServeHTTP(w, r)
			}
			return time.Since(t0)
		}
		var ratios []float64 // per pair of blocks: robust to a burst of load on a shared machine
		for b.Loop() {
			// Which goes first alternates: neither always follows
			// the other's garbage.
			var dp, dq time.Duration
			if n/block%2 == 0 {
				dp = serve(plain)
				dq = serve(pinned)
			} else {
				dq = serve(pinned)
				dp = serve(plain)
			}
			tPlain, tPinned = tPlain+dp, tPinned+dq
			ratios = append(ratios, float64(dq)/float64(dp))
			n += block
			if w.status != http.StatusOK {
				b.Fatalf("status %d", w.status)
			}
		}
		b.ReportMetric(float64(tPlain.Nanoseconds())/float64(n), "plain-ns/req")
		b.ReportMetric(float64(tPinned.Nanoseconds())/float64(n), "asof-ns/req")
		b.ReportMetric(float64(tPinned)/float64(tPlain), "asof/plain")
		slices.Sort(ratios)
		b.ReportMetric(ratios[len(ratios)/2], "asof/plain-median")
	})
}

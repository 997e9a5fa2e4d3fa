package redislimit

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// docs/contract.md section 16: three instances on one real redis-server, a key
// limited to 50/s burst 50, offered 200/s for 20 s (synctest's clock: the
// test takes well under a second of wall time; the script is given that
// clock, so Redis's buckets run on it too). The fleet admits between 0.9
// and 1.1 times 50 x 20 + 50 = 1050 when all the load reaches one
// instance, when it is spread evenly (over the three, and over ten), and
// when one instance is stopped at second 10 without returning its tokens
// (they are lost, never granted again).
func TestFleetAccuracy(t *testing.T) {
	srv := redistest.Start(t)
	lim := ratelimit.Limit{PerSecond: 50, Burst: 50}
	const (
		secs   = 20
		rate   = 200
		expect = 50*secs + 50
	)
	for _, tc := range []struct {
		name      string
		instances int
		pick      func(i int, alive int) int // which instance gets request i
		killAt    int                        // request at which the last instance stops; 0: never
	}{
		{"one-instance", 3, func(int, int) int { return 0 }, 0},
		{"spread", 3, func(i, alive int) int { return i % alive }, 0},
		{"one-killed-at-10s", 3, func(i, alive int) int { return i % alive }, 10 * rate},
		{"spread-over-10", 10, func(i, alive int) int { return i % alive }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var ls []*Limiter
				for range tc.instances {
					l, _ := newLimiter(t, srv.URL(), "aurora")
					ls = append(ls, l)
				}
				key := ratelimit.Key{Kind: ratelimit.APIKey, ID: "key_" + tc.name}
				admitted, alive := 0, tc.instances
				perInstance := make([]int, tc.instances)
				for i := range secs * rate {
					if tc.killAt > 0 && i == tc.killAt {
						alive--
						ls[alive].Close() // its tokens die with it
					}
					n := tc.pick(i, alive)
					if allow(t, ls[n], key, lim, 1).Allowed {
						admitted++
						perInstance[n]++
					}
					time.Sleep(time.Second / rate)
				}
				ratio := float64(admitted) / expect
				t.Logf("admitted %d of %d offered (%.3fx of %d); by instance %v", admitted, secs*rate, ratio, expect, perInstance)
				if ratio < 0.9 || ratio > 1.1 {
					t.Errorf("admitted %d: %.3fx of %d; want 0.9x to 1.1x", admitted, ratio, expect)
				}
			})
		})
	}
}

package edge_test

import (
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/problem"
)

// fakeClock is a settable clock for the edge.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// 429 RATE_LIMITED when limiting is on: per key, with Retry-After and the
// RateLimit headers; the bucket refills with time.
func TestRateLimit(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
	h := newHarness(t, harnessOptions{now: clock.Now, rateLimit: edge.RateLimit{PerSecond: 0.5, Burst: 2}})
	for i := 0; i < 2; i++ {
		req := request{path: "/v1/", key: "live"}
		wantOK(t, req, h.do(req))
	}
	req := request{path: "/v1/properties", key: "live"}
	res := h.do(req)
	wantProblem(t, req, res, problem.RateLimited)
	for hdr, want := range map[string]string{"Retry-After": "2", "Ratelimit-Limit": "2", "Ratelimit-Remaining": "0", "Ratelimit-Reset": "2"} {
		if got := res.header.Get(hdr); got != want {
			t.Errorf("%s = %q, want %q", hdr, got, want)
		}
	}
	// Another key has its own bucket; an unauthenticated request is not counted.
	other := request{path: "/v1/", key: "test"}
	wantOK(t, other, h.do(other))
	anon := request{path: "/v1/"}
	wantProblem(t, anon, h.do(anon), problem.MissingAuthHeader)
	// Health is never limited.
	if res := h.do(request{path: "/v1/health"}); res.status != 200 {
		t.Errorf("health %d", res.status)
	}
	clock.Add(2 * time.Second)
	req = request{path: "/v1/", key: "live"}
	wantOK(t, req, h.do(req))
}

package edge_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
)

// newClock is the edge tests' clock, at a fixed instant.
func newClock() *testkit.Clock {
	return testkit.NewClockAt(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
}

// clientFrom returns a client whose connections come from the loopback
// address ip (Linux routes all of 127.0.0.0/8 to lo): another TCP peer.
func clientFrom(t testing.TB, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func wantHeaders(t *testing.T, what string, res response, want map[string]string) {
	t.Helper()
	for hdr, w := range want {
		if got := res.header.Values(hdr); (w == "" && len(got) != 0) || (w != "" && (len(got) != 1 || got[0] != w)) {
			t.Errorf("%s: %s = %q, want %q", what, hdr, got, w)
		}
	}
}

// 429 RATE_LIMITED past the default quota: per key, with Retry-After and
// the RateLimit fields of draft-ietf-httpapi-ratelimit-headers-10 on every
// authenticated answer, errors after authentication included; the bucket
// refills with time.
func TestRateLimit(t *testing.T) {
	clock := newClock()
	h := newHarness(t, harnessOptions{now: clock.Now, rateLimit: ratelimit.Limit{PerSecond: 0.5, Burst: 2}})
	policy := `"default";q=2;w=4`
	req := request{path: "/v1/", key: "live"}
	wantOK(t, req, h.do(req))
	// A 400 after authentication is counted and carries the fields too.
	bad := request{path: "/v1/properties?perPage=x", key: "live"}
	res := h.do(bad)
	wantProblem(t, bad, res, problem.InvalidQueryParameter)
	wantHeaders(t, "last unit", res, map[string]string{"Ratelimit-Policy": policy, "Ratelimit": `"default";r=0;t=2`})

	req = request{path: "/v1/properties", key: "live"}
	res = h.do(req)
	wantProblem(t, req, res, problem.RateLimited)
	wantHeaders(t, "429", res, map[string]string{"Retry-After": "2", "Ratelimit-Policy": policy, "Ratelimit": `"default";r=0;t=2`,
		"Ratelimit-Limit": "", "Ratelimit-Remaining": "", "Ratelimit-Reset": ""})

	// Another key has its own bucket; an unauthenticated request is not counted.
	other := request{path: "/v1/", key: "test"}
	res = h.do(other)
	wantOK(t, other, res)
	wantHeaders(t, "first of another key", res, map[string]string{"Ratelimit-Policy": policy, "Ratelimit": `"default";r=1;t=2`})
	anon := request{path: "/v1/"}
	res = h.do(anon)
	wantProblem(t, anon, res, problem.MissingAuthHeader)
	wantHeaders(t, "401", res, map[string]string{"Ratelimit-Policy": "", "Ratelimit": ""})
	// Health is never limited.
	if res := h.do(request{path: "/v1/health"}); res.status != 200 || res.header.Get("Ratelimit") != "" {
		t.Errorf("health %d %q", res.status, res.header.Get("Ratelimit"))
	}
	clock.Advance(2 * time.Second)
	req = request{path: "/v1/", key: "live"}
	res = h.do(req)
	wantOK(t, req, res)
	wantHeaders(t, "after a refill", res, map[string]string{"Ratelimit": `"default";r=0;t=2`})
	clock.Advance(10 * time.Second)
	res = h.do(req)
	wantHeaders(t, "after a full refill", res, map[string]string{"Ratelimit": `"default";r=1;t=2`})
}

// A key's own rateLimit limits it even with no default, and overrides the
// default; keys without a quota carry no RateLimit fields.
func TestRateLimitPerKey(t *testing.T) {
	clock := newClock()
	own := map[string]map[string]any{"live": {"rateLimit": map[string]any{"perSecond": 10, "burst": 20}}}
	h := newHarness(t, harnessOptions{now: clock.Now, keyOver: own})
	req := request{path: "/v1/", key: "live"}
	for i := range 20 {
		res := h.do(req)
		wantOK(t, req, res)
		if i == 0 {
			wantHeaders(t, "first", res, map[string]string{"Ratelimit-Policy": `"default";q=20;w=2`, "Ratelimit": `"default";r=19;t=1`})
		}
	}
	wantProblem(t, req, h.do(req), problem.RateLimited)
	other := request{path: "/v1/", key: "test"}
	for range 30 {
		res := h.do(other)
		wantOK(t, other, res)
		wantHeaders(t, "unlimited key", res, map[string]string{"Ratelimit-Policy": "", "Ratelimit": ""})
	}

	// With a generous default, the key's own smaller quota still applies.
	own = map[string]map[string]any{"live": {"rateLimit": map[string]any{"perSecond": 1, "burst": 1}}}
	h = newHarness(t, harnessOptions{now: clock.Now, keyOver: own, rateLimit: ratelimit.Limit{PerSecond: 100, Burst: 100}})
	wantOK(t, req, h.do(req))
	res := h.do(req)
	wantProblem(t, req, res, problem.RateLimited)
	wantHeaders(t, "own quota", res, map[string]string{"Retry-After": "1", "Ratelimit-Policy": `"default";q=1;w=1`, "Ratelimit": `"default";r=0;t=1`})
	wantHeaders(t, "default quota", h.do(other), map[string]string{"Ratelimit-Policy": `"default";q=100;w=1`, "Ratelimit": `"default";r=99;t=1`})
}

// recordingLimiter records calls, then fails or delegates.
type recordingLimiter struct {
	mu    sync.Mutex
	calls []string
	fail  bool
	next  ratelimit.Limiter
}

func (l *recordingLimiter) AllowN(ctx context.Context, key ratelimit.Key, lim ratelimit.Limit, n int) (ratelimit.Decision, error) {
	l.mu.Lock()
	l.calls = append(l.calls, key.ID)
	l.mu.Unlock()
	if l.fail {
		return ratelimit.Decision{}, errors.New("redis: connection refused")
	}
	return l.next.AllowN(ctx, key, lim, n)
}

// The configured Limiter keeps the buckets; when it fails, the edge limits
// in-process and the partner sees no error.
func TestRateLimitUsesLimiter(t *testing.T) {
	for _, fail := range []bool{false, true} {
		clock := newClock()
		lim := &recordingLimiter{fail: fail, next: ratelimit.NewLocal(clock.Now, 0)}
		h := newHarness(t, harnessOptions{now: clock.Now, limiter: lim, rateLimit: ratelimit.Limit{PerSecond: 1, Burst: 2}})
		req := request{path: "/v1/", key: "live"}
		wantOK(t, req, h.do(req))
		wantOK(t, req, h.do(req))
		wantProblem(t, req, h.do(req), problem.RateLimited)
		lim.mu.Lock()
		if len(lim.calls) != 3 || lim.calls[0] != "key_live" {
			t.Errorf("fail=%v: limiter calls %q", fail, lim.calls)
		}
		lim.mu.Unlock()
	}
}

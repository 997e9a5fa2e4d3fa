package edge_test

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/ratelimit/redislimit"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// countingStore counts the lookups that reach the key store.
type countingStore struct {
	edge.KeyStore
	n atomic.Int64
}

func (s *countingStore) Lookup(token string) (*keys.Key, bool) {
	s.n.Add(1)
	return s.KeyStore.Lookup(token)
}

func wrongKey(t testing.TB) string { return "svc_live_" + randomAlnum(t, 32) }

// docs/contract.md section 10: 30 wrong keys from one address within a minute
// get 429 with Retry-After once the limit (20) is passed, and from then on
// the key store is not consulted; a valid key from another address is
// served; time lets the address try again.
func TestAuthThrottle(t *testing.T) {
	clock := newClock()
	var store *countingStore
	h := newHarness(t, harnessOptions{now: clock.Now, authFailLimit: 20,
		wrapKeys: func(ks edge.KeyStore) edge.KeyStore { store = &countingStore{KeyStore: ks}; return store }})

	var unauthorized, throttled int
	for i := range 30 {
		req := request{path: "/v1/properties", key: wrongKey(t)}
		res := h.do(req)
		clock.Advance(time.Second / 20) // 30 tries in 1.5 s
		switch res.status {
		case 401:
			wantProblem(t, req, res, problem.InvalidAPIKey)
			unauthorized++
		case 429:
			wantProblem(t, req, res, problem.RateLimited)
			if ra := res.header.Get("Retry-After"); ra == "" || ra == "0" {
				t.Errorf("try %d: Retry-After %q", i, ra)
			}
			if res.header.Get("Ratelimit") != "" || res.header.Get("Www-Authenticate") != "" {
				t.Errorf("try %d: throttle answer carries %v", i, res.header)
			}
			throttled++
		default:
			t.Fatalf("try %d: status %d", i, res.status)
		}
	}
	if unauthorized != 20 || throttled != 10 {
		t.Errorf("%d 401s and %d 429s, want 20 and 10", unauthorized, throttled)
	}
	if n := store.n.Load(); n != 20 {
		t.Errorf("the key store was consulted %d times, want 20 (never once throttled)", n)
	}

	// The throttled address is refused before its key is looked at, even a
	// valid one; a valid key from another address is served.
	before := store.n.Load()
	req := request{path: "/v1/", key: "live"}
	res := h.do(req)
	wantProblem(t, req, res, problem.RateLimited)
	if store.n.Load() != before {
		t.Errorf("a throttled request reached the key store")
	}
	req.from = "127.0.0.2"
	wantOK(t, req, h.do(req))
	// Failures are all that count: valid keys from the other address do not
	// use up its budget.
	for range 30 {
		wantOK(t, req, h.do(req))
	}

	// 20 a minute: one more try every 3 s (the clock is at 1.5 s).
	clock.Advance(1500 * time.Millisecond)
	bad := request{path: "/v1/", key: wrongKey(t)}
	wantProblem(t, bad, h.do(bad), problem.InvalidAPIKey)
	res = h.do(bad)
	wantProblem(t, bad, res, problem.RateLimited)
	if ra := res.header.Get("Retry-After"); ra != "3" {
		t.Errorf("Retry-After %q, want 3", ra)
	}
	clock.Advance(time.Minute)
	wantOK(t, request{path: "/v1/", key: "live"}, h.do(request{path: "/v1/", key: "live"}))
}

// Only 401 INVALID_API_KEY counts: a missing or malformed header looks no
// key up, and a known key refused later (expired, suspended) is no guess.
func TestAuthThrottleCountsInvalidKeysOnly(t *testing.T) {
	h := newHarness(t, harnessOptions{now: newClock().Now, authFailLimit: 2})
	for range 10 {
		for _, req := range []request{
			{path: "/v1/"},
			{path: "/v1/", headers: map[string][]string{"Authorization": {"Basic abc"}}},
			{path: "/v1/", key: "expired"},
			{path: "/v1/", key: "suspended"},
		} {
			if res := h.do(req); res.status == 429 {
				t.Fatalf("%v throttled", req.headers)
			}
		}
	}
}

// A zero limit disables the throttle.
func TestAuthThrottleOff(t *testing.T) {
	h := newHarness(t, harnessOptions{now: newClock().Now})
	for range 40 {
		req := request{path: "/v1/", key: wrongKey(t)}
		wantProblem(t, req, h.do(req), problem.InvalidAPIKey)
	}
}

// X-Forwarded-For is believed only from a trusted proxy: behind one, each
// client address has its own budget and is the one logged; without one,
// rotating X-Forwarded-For values evade nothing.
func TestAuthThrottleTrustedProxies(t *testing.T) {
	from := func(addr string) request {
		return request{path: "/v1/", key: wrongKey(t), headers: map[string][]string{"X-Forwarded-For": {"203.0.113.50, " + addr}}}
	}
	h := newHarness(t, harnessOptions{now: newClock().Now, authFailLimit: 2, trustedProxies: "127.0.0.1/32"})
	for i, want := range []int{401, 401, 429} {
		if res := h.do(from("198.51.100.1")); res.status != want {
			t.Errorf("try %d through the proxy: %d, want %d", i, res.status, want)
		}
	}
	if res := h.do(from("198.51.100.2")); res.status != 401 {
		t.Errorf("another client behind the proxy: %d, want 401", res.status)
	}
	if !logHas(t, h, "client_address", "198.51.100.1") || logHas(t, h, "client_address", "203.0.113.50") {
		t.Errorf("access log client addresses: %s", h.logs.String())
	}

	h = newHarness(t, harnessOptions{now: newClock().Now, authFailLimit: 2})
	for i, want := range []int{401, 401, 429, 429} {
		if res := h.do(from("198.51.100." + string(rune('1'+i)))); res.status != want {
			t.Errorf("try %d with a spoofed X-Forwarded-For: %d, want %d", i, res.status, want)
		}
	}
	if !logHas(t, h, "client_address", "127.0.0.1") || logHas(t, h, "client_address", "198.51.100.1") {
		t.Errorf("access log believed an untrusted X-Forwarded-For: %s", h.logs.String())
	}
}

// logHas reports whether an access line has field = value.
func logHas(t *testing.T, h *harness, field, value string) bool {
	t.Helper()
	for line := range strings.Lines(h.logs.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "request" && m[field] == value {
			return true
		}
	}
	return false
}

// docs/contract.md section 16: with EDGE_AUTH_FAIL_LIMIT=20 and three instances
// sharing the throttle through one real redis-server (redislimit, each
// instance on its own client), one address sending wrong keys to the
// instances in turn gets 429 by its 25th failure within the minute, and
// from then on from every instance. The clock stands still (it is given
// to the script too): Redis refills nothing, so the count is exact.
func TestAuthThrottleAcrossFleet(t *testing.T) {
	srv := redistest.Start(t)
	clock := newClock()
	var hs []*harness
	for range 3 {
		c, err := redisconn.New(redisconn.Config{URL: srv.URL(), Guard: redisconn.GuardConfig{CallTimeout: 5 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		lim := redislimit.New(redislimit.Config{Client: c, Brand: "aurora", Now: clock.Now})
		t.Cleanup(lim.Close)
		hs = append(hs, newHarness(t, harnessOptions{now: clock.Now, authFailLimit: 20, limiter: lim}))
	}
	first := 0
	for i := range 30 {
		req := request{path: "/v1/properties", key: wrongKey(t)}
		res := hs[i%3].do(req)
		switch res.status {
		case 401:
			if first > 0 {
				t.Errorf("try %d (instance %d): 401 after the first 429 (try %d)", i+1, i%3, first)
			}
		case 429:
			wantProblem(t, req, res, problem.RateLimited)
			if first == 0 {
				first = i + 1
			}
		default:
			t.Fatalf("try %d: status %d", i+1, res.status)
		}
	}
	t.Logf("first 429 at failure %d", first)
	if first < 21 || first > 25 {
		t.Errorf("first 429 at try %d; want from the 21st to the 25th", first)
	}
}

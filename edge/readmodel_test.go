package edge_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// cached wraps the harness's catalogs in the read model.
func cached(t *testing.T, ttl time.Duration) func(live, sandbox upstream.Catalog) (upstream.Catalog, upstream.Catalog) {
	return func(live, sandbox upstream.Catalog) (upstream.Catalog, upstream.Catalog) {
		l := cache.New(live, cache.Config{Key: "aurora/live", TTL: ttl})
		t.Cleanup(l.Close)
		if sandbox == nil {
			return l, nil
		}
		s := cache.New(sandbox, cache.Config{Key: "aurora/test", TTL: ttl})
		t.Cleanup(s.Close)
		return l, s
	}
}

// Issue 8, acceptance 1: from cold, 10,000 gets of random unknown UUIDs
// from 20 concurrent clients through the real edge are all 404
// PROPERTY_NOT_FOUND, and the PMS sees one list walk (4 pages of 10 at
// most 5 requests) plus at most 5 other calls.
func TestUnknownIDFloodFromCold(t *testing.T) {
	h := newHarness(t, harnessOptions{pageSize: 10, catalogs: cached(t, time.Minute)})
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := map[int]int{}
	for range 20 {
		wg.Go(func() {
			for range 500 {
				res := h.do(request{path: "/v1/properties/" + uuid.NewString(), key: "live"})
				if res.status != 404 {
					mu.Lock()
					bad[res.status]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(bad) != 0 {
		t.Fatalf("answers other than 404, by status: %v", bad)
	}
	req := request{path: "/v1/properties/" + uuid.NewString(), key: "live"}
	wantProblem(t, req, h.do(req), problem.PropertyNotFound)
	if gets, all := h.live.GetRequests(), h.live.Requests(); gets != 0 || all > 5+5 {
		t.Fatalf("PMS requests %d (gets %d), want one list walk (<= 5 pages) and no gets", all, gets)
	}
}

// Issue 8, acceptance 5: a PMS shedding load with Retry-After, and no
// cached data: 503 with the PMS's Retry-After clamped to 1..60 s, and no
// further PMS call before it has passed.
func TestPMSSheddingReachesPartner(t *testing.T) {
	for header, want := range map[string]string{"7": "7", "120": "60"} {
		t.Run(header, func(t *testing.T) {
			h := newHarness(t, harnessOptions{catalogs: cached(t, time.Minute)})
			h.live.SetFaults(pmsim.Faults{ErrorRate: 1, ErrorStatus: 503, RetryAfter: header})
			req := request{path: "/v1/properties", key: "live"}
			res := h.do(req)
			wantProblem(t, req, res, problem.ServiceUnavailable)
			if got := res.header.Get("Retry-After"); got != want {
				t.Fatalf("Retry-After %q, want %q", got, want)
			}
			before := h.live.Requests()
			res = h.do(req)
			wantProblem(t, req, res, problem.ServiceUnavailable)
			if h.live.Requests() != before {
				t.Fatalf("the PMS was called %d times during its Retry-After", h.live.Requests()-before)
			}
		})
	}
}

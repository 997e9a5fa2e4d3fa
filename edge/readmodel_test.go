package edge_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// cached wraps the harness's catalogs in the read model, on now: the
// harness's clock, which stamps the walks the cache ages.
func cached(t *testing.T, ttl time.Duration, now func() time.Time) func(live, sandbox upstream.Catalog) (upstream.Catalog, upstream.Catalog) {
	return func(live, sandbox upstream.Catalog) (upstream.Catalog, upstream.Catalog) {
		l := cache.New(live, cache.Config{Key: "aurora/live", TTL: ttl, Now: now})
		t.Cleanup(l.Close)
		if sandbox == nil {
			return l, nil
		}
		s := cache.New(sandbox, cache.Config{Key: "aurora/test", TTL: ttl, Now: now})
		t.Cleanup(s.Close)
		return l, s
	}
}

// docs/contract.md section 11: from cold, 10,000 gets of random unknown UUIDs
// from 20 concurrent clients through the real edge are all 404
// PROPERTY_NOT_FOUND, and the PMS sees one list walk (4 pages of 10 at
// most 5 requests) plus at most 5 other calls.
func TestUnknownIDFloodFromCold(t *testing.T) {
	// A generous PMS deadline: the one cold load runs while 20 clients
	// hammer the edge (with -race on 2 cores); this test counts PMS calls.
	// A TTL no run reaches: on a busy machine the flood takes about a
	// minute, and a call past 0.8 of the TTL starts a refresh, another walk.
	now := testkit.From(testkit.Epoch)
	h := newHarness(t, harnessOptions{now: now, pageSize: 10, catalogs: cached(t, time.Hour, now), pmsCallTimeout: 10 * time.Second})
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

// docs/contract.md section 11: a PMS shedding load with Retry-After, and no
// cached data: 503 with the PMS's Retry-After clamped to 1..60 s, and no
// further PMS call before it has passed.
func TestPMSSheddingReachesPartner(t *testing.T) {
	for header, want := range map[string]string{"7": "7", "120": "60"} {
		t.Run(header, func(t *testing.T) {
			now := testkit.From(testkit.Epoch)
			h := newHarness(t, harnessOptions{now: now, catalogs: cached(t, time.Minute, now)})
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

// panicky is a Catalog whose first Snapshot panics, as a load that meets a
// record some bug cannot survive.
type panicky struct {
	upstream.Catalog
	calls atomic.Int32
}

func (p *panicky) Snapshot(ctx context.Context) (*upstream.Snapshot, error) {
	if p.calls.Add(1) == 1 {
		panic("a record the load cannot survive")
	}
	return p.Catalog.Snapshot(ctx)
}

// docs/contract.md section 11 at the edge: a panicking load answers 500
// INTERNAL_ERROR (no panic text), the next request loads again and is
// served, and the process goes on (goleak runs after the suite).
func TestPanickingLoadAnswers500(t *testing.T) {
	now := testkit.From(testkit.Epoch)
	h := newHarness(t, harnessOptions{now: now, catalogs: func(live, sandbox upstream.Catalog) (upstream.Catalog, upstream.Catalog) {
		l := cache.New(&panicky{Catalog: live}, cache.Config{Key: "aurora/live", TTL: time.Minute, Now: now})
		t.Cleanup(l.Close)
		return l, sandbox
	}})
	req := request{path: "/v1/properties", key: "live"}
	res := h.do(req)
	wantProblem(t, req, res, problem.InternalError)
	if bytes.Contains(res.body, []byte("cannot survive")) || bytes.Contains(res.body, []byte("panic")) {
		t.Fatalf("the panic leaked into the answer: %s", res.body)
	}
	if res = h.do(req); res.status != 200 {
		t.Fatalf("after the panic: %d %s, want 200", res.status, res.body)
	}
}

// dataOf is the data member of an envelope.
func dataOf(t *testing.T, body []byte) string {
	t.Helper()
	var env struct{ Data json.RawMessage }
	if err := json.Unmarshal(body, &env); err != nil || len(env.Data) == 0 {
		t.Fatalf("not an envelope: %s", body)
	}
	return string(env.Data)
}

// docs/contract.md section 9, 11 and 24 at the edge, on an injected clock: past the TTL
// the last snapshot answers while a walk refreshes it; once that walk has
// failed it is served as stale data, unchanged, until it is
// EDGE_CACHE_STALE old; after that the PMS failure is answered.
func TestStaleServedWhilePMSFails(t *testing.T) {
	clock := newClock()
	h := newHarness(t, harnessOptions{now: clock.Now, catalogs: func(live, sandbox upstream.Catalog) (upstream.Catalog, upstream.Catalog) {
		// The cache's metrics (on a no-op meter) report its outcome to the
		// request, for the access line.
		cm, err := cache.NewMetrics(metricnoop.NewMeterProvider().Meter("test"), "live")
		if err != nil {
			t.Fatal(err)
		}
		l := cache.New(live, cache.Config{Key: "aurora/live", TTL: 30 * time.Second, Stale: 5 * time.Minute, Now: clock.Now, Metrics: cm})
		t.Cleanup(l.Close)
		return l, sandbox
	}})
	req := request{path: "/v1/properties", key: "live"}
	fresh := h.do(req)
	if fresh.status != 200 {
		t.Fatalf("first list: %d %s", fresh.status, fresh.body)
	}
	if line := accessLine(t, h.logs, fresh.header.Get("Svc-Request-Id")); line["cache"] != "miss" {
		t.Errorf("the first list's access line: cache %v, want miss", line["cache"])
	}
	h.live.SetFaults(pmsim.Faults{ErrorStatus: 500})
	clock.Advance(31 * time.Second)
	if res := h.do(req); res.status != 200 || dataOf(t, res.body) != dataOf(t, fresh.body) {
		t.Fatalf("past the TTL: %d %s, want the held page while the refresh walks", res.status, res.body)
	}
	testkit.Eventually(t, "the refresh walk failed: the held page is served as stale", func() bool {
		res := h.do(req)
		return res.status == 200 && accessLine(t, h.logs, res.header.Get("Svc-Request-Id"))["cache"] == "stale"
	})
	for _, age := range []time.Duration{2 * time.Minute, 4*time.Minute + 50*time.Second} {
		clock.Advance(age - clock.Now().Sub(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)))
		res := h.do(req)
		if res.status != 200 || dataOf(t, res.body) != dataOf(t, fresh.body) {
			t.Fatalf("at age %s with the PMS failing: %d %s, want the stale page", age, res.status, res.body)
		}
		// A stale answer's access line says so (docs/observability.md, Logs).
		if line := accessLine(t, h.logs, res.header.Get("Svc-Request-Id")); line["cache"] != "stale" {
			t.Errorf("at age %s: the access line's cache %v, want stale", age, line["cache"])
		}
	}
	clock.Advance(20 * time.Second) // 5m10s: past EDGE_CACHE_STALE
	res := h.do(req)
	var pb struct{ Code string }
	_ = json.Unmarshal(res.body, &pb)
	if (res.status != 502 || pb.Code != string(problem.BadGateway)) && (res.status != 503 || pb.Code != string(problem.ServiceUnavailable)) {
		t.Fatalf("past EDGE_CACHE_STALE: %d %s, want 502 BAD_GATEWAY or 503 SERVICE_UNAVAILABLE (breaker open)", res.status, res.body)
	}
}

// docs/contract.md section 10: a PMS 404 on the list route is a PMS failure (a wrong base
// address or route), never an empty list: 502 BAD_GATEWAY.
func TestListNotFoundIsBadGateway(t *testing.T) {
	now := testkit.From(testkit.Epoch)
	h := newHarness(t, harnessOptions{now: now, catalogs: cached(t, time.Minute, now)})
	h.live.SetFaults(pmsim.Faults{ErrorStatus: 404})
	req := request{path: "/v1/properties", key: "live"}
	wantProblem(t, req, h.do(req), problem.BadGateway)
}

package edge_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// PMS failures as partners see them (docs/contract.md section 7): no 5xx body
// names the PMS, its address or a Go error.
func TestUpstreamFailures(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := activeIDs(t, h.live, testBrand)[0]
	noLeaks := func(t *testing.T, res response) {
		t.Helper()
		for _, leak := range []string{"127.0.0.1", "internal/v2", "dial", "EOF", "context deadline", "status 5"} {
			if strings.Contains(string(res.body), leak) {
				t.Errorf("5xx body leaks %q: %s", leak, short(res.body))
			}
		}
	}

	t.Run("PMS answers 500s: 502", func(t *testing.T) {
		h.live.SetFaults(pmsim.Faults{ErrorRate: 1, ErrorStatus: 500})
		req := request{path: "/v1/properties", key: "live"}
		res := h.do(req)
		wantProblem(t, req, res, problem.BadGateway)
		noLeaks(t, res)
	})
	t.Run("PMS too slow: 504", func(t *testing.T) {
		h.live.SetFaults(pmsim.Faults{Latency: 2 * time.Second})
		req := request{path: "/v1/properties/" + id, key: "live"}
		start := time.Now()
		res := h.do(req)
		wantProblem(t, req, res, problem.GatewayTimeout)
		noLeaks(t, res)
		if el := time.Since(start); el > 1500*time.Millisecond {
			t.Errorf("504 took %s; the call deadline is 600ms", el)
		}
	})
	t.Run("circuit open: 503 with Retry-After", func(t *testing.T) {
		h.live.SetFaults(pmsim.Faults{ErrorRate: 1, ErrorStatus: 503})
		var res response
		req := request{path: "/v1/properties", key: "live"}
		for i := 0; i < 5; i++ {
			res = h.do(req)
			if res.status == 503 {
				break
			}
		}
		wantProblem(t, req, res, problem.ServiceUnavailable)
		noLeaks(t, res)
		secs, err := strconv.Atoi(res.header.Get("Retry-After"))
		if err != nil || secs < 1 || secs > 30 {
			t.Errorf("Retry-After %q, want 1..30 seconds", res.header.Get("Retry-After"))
		}
		before := h.live.Requests()
		h.do(req)
		if h.live.Requests() != before {
			t.Errorf("an open circuit still called the PMS")
		}
		// The sandbox has its own breaker and keeps serving test keys.
		req = request{path: "/v1/properties", key: "test"}
		wantOK(t, req, h.do(req))
		// Health does not follow the PMS (docs/contract.md section 8).
		if res := h.do(request{path: "/v1/health"}); res.status != 200 {
			t.Errorf("health %d with the circuit open", res.status)
		}
	})
}

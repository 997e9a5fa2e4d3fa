package edge_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// accessLines counts the "request" lines of the harness's log by status.
func accessLines(t *testing.T, h *harness) map[int]int {
	t.Helper()
	n := map[int]int{}
	sc := bufio.NewScanner(strings.NewReader(h.logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Msg    string
			Status int
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "request" {
			n[line.Status]++
		}
	}
	return n
}

// docs/operations.md: sampling of the access log is an explicit setting that only
// ever leaves out successful lines; by default every request is logged.
func TestAccessLogSampling(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sample float64
		want   func(ok int) bool
	}{
		{"default: every line", 0, func(ok int) bool { return ok == 40 }},
		{"1: every line", 1, func(ok int) bool { return ok == 40 }},
		// 1e-12: the chance that any of 40 lines is kept is 4e-11.
		{"tiny fraction: successes left out", 1e-12, func(ok int) bool { return ok == 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{accessLogSample: tc.sample, noSandbox: true})
			for range 40 {
				if res := h.do(request{path: "/v1/health"}); res.status != http.StatusOK {
					t.Fatalf("health: %d", res.status)
				}
				if res := h.do(request{path: "/v1/nowhere", key: "live"}); res.status != http.StatusNotFound {
					t.Fatalf("unknown route: %d", res.status)
				}
				if res := h.do(request{path: "/v1/properties", key: "suspended"}); res.status < 400 {
					t.Fatalf("suspended key: %d", res.status)
				}
			}
			n := accessLines(t, h)
			if !tc.want(n[200]) {
				t.Errorf("%d lines of 200 for 40 requests", n[200])
			}
			if n[404] != 40 {
				t.Errorf("%d lines of 404 for 40 requests: errors are never sampled", n[404])
			}
			errs := 0
			for code, c := range n {
				if code >= 400 && code != 404 {
					errs += c
				}
			}
			if errs != 40 {
				t.Errorf("%d lines for 40 refused keys", errs)
			}
		})
	}
}

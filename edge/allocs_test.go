//go:build !race

// The race detector's sync.Pool drops what is put back at random: answers
// then allocate their buffers again, and counts mean nothing.

package edge_test

import (
	"net/http"
	"testing"
)

// TestDeployedAllocations holds the allocations of a cached answer as
// deployed (newDeployedEnv: access log, telemetry, shedding, the
// failed-auth throttle), per request, through NewServer: a change that adds
// one fails here; one that saves some lowers the figure
// (bench/results/2026-11-28-hot-path.md). The sampler's ratio is 0, so that
// no request is sampled in (one in a hundred is as deployed, and records
// its span): the path of the other 99.
func TestDeployedAllocations(t *testing.T) {
	env := newDeployedEnv(t, "0")
	want := map[string]float64{"get": 14, "list": 12, "events": 12}
	for _, c := range deployedTargets(env, env.eventsAfter(t)) {
		r := env.request(c.target, env.liveToken)
		warm(t, env.handler, r, http.StatusOK)
		w := newBenchWriter()
		got := testing.AllocsPerRun(500, func() {
			w.reset()
			env.handler.ServeHTTP(w, r)
		})
		if w.status != http.StatusOK {
			t.Fatalf("%s: status %d", c.name, w.status)
		}
		if got != want[c.name] {
			t.Errorf("%s: %v allocations a request, want %v", c.name, got, want[c.name])
		}
	}
}

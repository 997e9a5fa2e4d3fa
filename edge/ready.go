package edge

import (
	"encoding/json"
	"net/http"
)

// ReadyCheck is one condition of readiness (HandleReady): Name says what
// it checks (a PMS's snapshot, the key file, the drain), Check whether it
// holds now and, when it does not, why, in words an operator acts on.
type ReadyCheck struct {
	Name  string
	Check func() (ok bool, cause string)
}

// readyAnswer is the JSON of GET /readyz.
type readyAnswer struct {
	Status string       `json:"status"` // "ready" or "not_ready"
	Checks []readyCheck `json:"checks"`
}

type readyCheck struct {
	Name  string `json:"name"`
	Ready bool   `json:"ready"`
	Cause string `json:"cause,omitempty"`
}

// HandleReady answers readiness (GET /readyz on the admin listener,
// docs/operations.md, "Deploying behind a load balancer"): 200 with every check
// that holds, 503 with the cause of each one that does not. It is not
// liveness (/v1/health): an edge without a snapshot yet is alive but
// cannot answer partners, so a load balancer or a readiness probe waits
// for it. The answer is never cached.
func HandleReady(checks ...ReadyCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ans := readyAnswer{Status: "ready", Checks: make([]readyCheck, 0, len(checks))}
		status := http.StatusOK
		for _, c := range checks {
			ok, cause := c.Check()
			ans.Checks = append(ans.Checks, readyCheck{Name: c.Name, Ready: ok, Cause: cause})
			if !ok {
				ans.Status, status = "not_ready", http.StatusServiceUnavailable
			}
		}
		b, _ := json.Marshal(ans)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_, _ = w.Write(append(b, '\n'))
	})
}

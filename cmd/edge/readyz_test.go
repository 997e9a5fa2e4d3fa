package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// docs/operations.md, "Deploying behind a load balancer": through the built binary,
// the admin listener's /readyz answers 503 with its cause while the first
// walk is held at the PMS (no snapshot yet), while /v1/health, liveness,
// is 200 already; once the walk ends, /readyz is 200.
func TestReadyzWaitsForTheFirstSnapshot(t *testing.T) {
	t.Parallel()
	pms := newHeldPMS(t, pmsim.New(pmsim.Config{Seed: 5}))
	keysFile, _ := keystest.Live(t, "aurora")
	p := startEdgeProc(t, buildEdge(t), []string{
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=127.0.0.1:0", "EDGE_BRAND=aurora", "EDGE_KEYS_FILE=" + keysFile,
		"PMS_BASE_URL=" + pms.srv.URL, "PMS_TOKEN=pms-secret-token", "EDGE_DOCS_URL=" + testDocsURL, "EDGE_ACCESS_LOG=off",
		"EDGE_PMS_ATTEMPT_TIMEOUT=60s", // the held page is not retried
	})
	admin := waitAdmin(t, p.stderr)
	select {
	case <-pms.arrived:
	case <-time.After(testkit.EventuallyTimeout):
		t.Fatalf("no walk reached the PMS within %s of start-up", testkit.EventuallyTimeout)
	}

	code, ans := readyz(t, admin)
	if code != http.StatusServiceUnavailable || ans.Status != "not_ready" {
		t.Fatalf("/readyz with the first walk held: %d %+v, want 503 not_ready", code, ans)
	}
	var cause string
	for _, c := range ans.Checks {
		if c.Name == "pms live snapshot" && !c.Ready {
			cause = c.Cause
		}
	}
	if !strings.Contains(cause, "no snapshot yet") {
		t.Errorf("/readyz names no cause for the live PMS: %+v", ans)
	}
	if code := getStatus(t, "http://"+p.addr+"/v1/health"); code != http.StatusOK {
		t.Errorf("/v1/health with the first walk held: %d, want 200 (liveness)", code)
	}

	close(pms.release)
	testkit.Eventually(t, "/readyz answers 200 after the first walk", func() bool {
		code, _ := readyz(t, admin)
		return code == http.StatusOK
	})
	if _, ans := readyz(t, admin); ans.Status != "ready" {
		t.Errorf("/readyz after the first walk: %+v", ans)
	}
}

type readyzAnswer struct {
	Status string `json:"status"`
	Checks []struct {
		Name  string `json:"name"`
		Ready bool   `json:"ready"`
		Cause string `json:"cause"`
	} `json:"checks"`
}

// readyz asks admin's /readyz.
func readyz(t *testing.T, admin string) (int, readyzAnswer) {
	t.Helper()
	res, err := (&http.Client{Timeout: 5 * time.Second}).Get(admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var ans readyzAnswer
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("/readyz Content-Type %q", ct)
	}
	if err := json.NewDecoder(res.Body).Decode(&ans); err != nil {
		t.Fatalf("/readyz body: %v", err)
	}
	return res.StatusCode, ans
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	res, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

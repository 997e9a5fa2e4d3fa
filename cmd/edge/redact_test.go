package main

import (
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// docs/contract.md section 17: a real edge process given its secrets as flags
// (--pms-token, --fleet-secret, --pms-candidate-token, a Redis URL with a
// password) shows none of them at /debug/pprof/cmdline on the admin
// listener; the flags themselves are still there, values redacted.
func TestPprofCmdlineRedacted(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	pms, _ := slowPMS(t, 0)
	keysFile, _ := keystest.Live(t, "aurora")
	const (
		pmsToken    = "pms-token-0123456789abcdef"
		fleetSecret = "fleet-secret-0123456789abcdef0123456789"
		candToken   = "candidate-token-0123456789abcdef"
	)
	args := []string{
		"--addr=127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--brand=aurora",
		"--keys-file", keysFile, "--pms-base-url", pms.URL, "--docs-url", testDocsURL,
		"--pms-token", pmsToken, "-fleet-secret=" + fleetSecret,
		"--pms-candidate-token=" + candToken, "--pms-candidate-url", pms.URL,
	}
	cmd := exec.Command(bin, args...)
	stderr := &testkit.LogBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	admin := waitAdmin(t, stderr)

	res, err := http.Get(admin + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /debug/pprof/cmdline: %d %v", res.StatusCode, err)
	}
	shown := strings.Split(string(body), "\x00")
	for _, secret := range []string{pmsToken, fleetSecret, candToken} {
		if strings.Contains(string(body), secret) {
			t.Errorf("/debug/pprof/cmdline shows the secret %q: %q", secret, shown)
		}
	}
	for _, want := range []string{"--pms-token", "xxxxx", "-fleet-secret=xxxxx", "--pms-candidate-token=xxxxx", "--brand=aurora", keysFile} {
		if !slices.Contains(shown, want) {
			t.Errorf("/debug/pprof/cmdline lacks %q: %q", want, shown)
		}
	}
}

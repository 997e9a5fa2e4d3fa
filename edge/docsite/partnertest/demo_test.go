// Package partnertest uses the edge as a partner developer would: clients
// generated from docs/openapi.yaml (Go with oapi-codegen, TypeScript with
// openapi-typescript) and a real headless Chromium call the running demo
// (go run ./cmd/edge), with Prism validating traffic against the document.
//
// It is part of the edge's module, so go test ./... runs it: one go.mod to
// keep tidy. .ci/run installs the pinned Node tools (.ci/partner,
// .ci/docsite) and Chromium before the tests; with CI=true a missing tool
// fails a test, outside CI it skips it.
package partnertest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// repoRoot is the edge's repository, from this package's folder.
const repoRoot = "../../.."

// The demo's keys, written into its key file (a key file given to the demo
// is used as is): one per answer a partner's key can get.
const (
	liveKey      = "svc_live_PartnerTestLiveKey0000000001"
	expiredKey   = "svc_live_PartnerTestExpiredKey00000001"
	suspendedKey = "svc_live_PartnerTestSuspendedKey000001"
	otherKey     = "svc_live_PartnerTestOtherBrandKey00001"
	noScopeKey   = "svc_live_PartnerTestNoScopeKey00000001"
	testKey      = "svc_test_PartnerTestSandboxKey00000001"
)

// docsContact is the demo's EDGE_DOCS_CONTACT.
const docsContact = "mailto:partner-support@aurora.test"

// demo is the running demo: its /v1/ base and its docs URL.
type demo struct {
	base, docsURL string
}

var (
	demoOnce sync.Once
	theDemo  *demo
	demoErr  error
)

// need fails under CI=true and skips otherwise when a tool is missing.
func need(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required in CI: %v", what, err)
	}
	t.Skipf("%s not available: %v", what, err)
}

// startDemo builds cmd/edge and runs its demo (embedded simulators) on a
// free loopback port, once for the whole package; TestMain stops it.
func startDemo(t *testing.T) *demo {
	t.Helper()
	demoOnce.Do(func() { theDemo, demoErr = launch() })
	if demoErr != nil {
		t.Fatalf("demo: %v", demoErr)
	}
	select {
	case <-demoDone: // Wait has returned: ProcessState is set
		log, _ := os.ReadFile(filepath.Join(demoDir, "edge.log"))
		t.Fatalf("the demo exited (%v); its log:\n%s", demoCmd.ProcessState, log)
	default:
	}
	return theDemo
}

var (
	demoCmd  *exec.Cmd
	demoDir  string
	demoDone = make(chan struct{})
)

func launch() (*demo, error) {
	dir, err := os.MkdirTemp("", "partnertest-")
	if err != nil {
		return nil, err
	}
	demoDir = dir
	bin := filepath.Join(dir, "edge")
	build := exec.Command("go", "build", "-o", bin, "./cmd/edge")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./cmd/edge: %v\n%s", err, out)
	}
	keysFile := filepath.Join(dir, "keys.json")
	if err := writeKeys(keysFile); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin)
	// Only what the demo needs: EDGE_DOCS_URL stays unset, so the demo
	// points problem types at its own /docs.
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_KEYS_FILE=" + keysFile,
		// The failed-auth throttle answers 429 after one invalid key from
		// an address; X-Forwarded-For from loopback names the address, so
		// the test that provokes it uses an address of its own.
		"EDGE_AUTH_FAIL_LIMIT=1", "EDGE_TRUSTED_PROXIES=127.0.0.1/32",
		"EDGE_DOCS_CONTACT=" + docsContact,
		"EDGE_LOG_LEVEL=warn", "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none",
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "edge.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logFile // the demo's log; shown when the start fails
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	demoCmd = cmd
	go func() { _ = cmd.Wait(); close(demoDone) }()
	urlLine := regexp.MustCompile(`URL:\s+(http://\S+/v1/)`)
	docsLine := regexp.MustCompile(`docs:\s+(http://\S+)/`)
	d := &demo{}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	timeout := time.After(2 * time.Minute) // a start-up bound, not a speed assertion
	for d.base == "" || d.docsURL == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				log, _ := os.ReadFile(logFile.Name())
				return nil, fmt.Errorf("demo exited before printing its URL and docs URL:\n%s", log)
			}
			if m := urlLine.FindStringSubmatch(l); m != nil {
				d.base = m[1]
			}
			if m := docsLine.FindStringSubmatch(l); m != nil {
				d.docsURL = m[1]
			}
		case <-timeout:
			return nil, fmt.Errorf("demo printed no URL")
		}
	}
	go func() {
		for range lines { // keep the pipe drained
		}
	}()
	return d, nil
}

func writeKeys(path string) error {
	digest := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	rec := func(id, key, brand, mode, status string, expires any, scopes []string) map[string]any {
		r := map[string]any{"id": id, "partner": "Partner test", "sha256": digest(key), "brand": brand,
			"mode": mode, "properties": []string{"*"}, "status": status, "expiresAt": expires}
		if scopes != nil {
			r["scopes"] = scopes
		}
		return r
	}
	file := map[string]any{"keys": []any{
		rec("key_live", liveKey, "aurora", "live", "active", nil, nil),
		rec("key_expired", expiredKey, "aurora", "live", "active", "2020-01-01T00:00:00Z", nil),
		rec("key_suspended", suspendedKey, "aurora", "live", "suspended", nil, nil),
		rec("key_other", otherKey, "borealis", "live", "active", nil, nil),
		rec("key_noscope", noScopeKey, "aurora", "live", "active", nil, []string{"bookings:read"}),
		rec("key_test", testKey, "aurora", "test", "active", nil, nil),
	}}
	b, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if demoCmd != nil {
		_ = demoCmd.Process.Signal(os.Interrupt)
		select {
		case <-demoDone:
		case <-time.After(20 * time.Second):
			_ = demoCmd.Process.Kill()
			<-demoDone
		}
	}
	if demoDir != "" {
		_ = os.RemoveAll(demoDir)
	}
	if goClientTmp != "" {
		_ = os.RemoveAll(goClientTmp)
	}
	os.Exit(code)
}

// call sends one request to the demo and returns status, headers, body.
func call(t *testing.T, method, url string, hdr ...string) (int, http.Header, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, body
}

// origin is the scheme and host of the demo's base URL.
func (d *demo) origin() string { return strings.TrimSuffix(d.base, "/v1/") }

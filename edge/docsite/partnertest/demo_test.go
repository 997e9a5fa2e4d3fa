package partnertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// repoRoot is the edge's repository, from this package's folder.
const repoRoot = "../../.."

// The keys of the edge under test, written into its key file: one per
// answer a partner's key can get.
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

// unknownFrom returns a client address (TEST-NET-2) no earlier call
// returned: the demo throttles an address after one invalid key, and runs
// once for the package, so each provoking test, in every -count repetition,
// needs an address of its own.
func unknownFrom() string {
	return fmt.Sprintf("198.51.100.%d", 1+unknownAddrs.Add(1)%254)
}

var unknownAddrs atomic.Int64

var (
	demoCmd  *exec.Cmd
	demoDir  string
	demoDone = make(chan struct{})
	simStops []func()   // the simulators behind it
	demoLive *pmsim.Sim // its live PMS, which changedDemo changes
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
	// The demo's own simulators, live and sandbox, behind an edge deployed
	// as an operator would: the demo takes no key file of ours
	// (docs/contract.md section 21), and the keys below need one.
	demoLive = pmsim.New(pmsim.DemoLive)
	live, stopLive, err := pmsim.ServeLoopback(demoLive)
	if err != nil {
		return nil, err
	}
	sandbox, stopSandbox, err := pmsim.ServeLoopback(pmsim.New(pmsim.DemoSandbox))
	if err != nil {
		stopLive()
		return nil, err
	}
	simStops = []func(){stopLive, stopSandbox}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	public := "http://" + addr
	cmd := exec.Command(bin)
	// EDGE_DOCS_URL stays unset, so problem types point at the edge's own
	// /docs under EDGE_PUBLIC_URL.
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"EDGE_ADDR=" + addr, "EDGE_ADMIN_ADDR=", "EDGE_PUBLIC_URL=" + public,
		"EDGE_BRAND=" + pmsim.DemoBrand, "EDGE_KEYS_FILE=" + keysFile,
		"PMS_BASE_URL=" + live, "PMS_SANDBOX_URL=" + sandbox,
		// The failed-auth throttle answers 429 after one invalid key from
		// an address; X-Forwarded-For from loopback names the address, so
		// the test that provokes it uses an address of its own.
		"EDGE_AUTH_FAIL_LIMIT=1", "EDGE_TRUSTED_PROXIES=127.0.0.1/32",
		"EDGE_DOCS_CONTACT=" + docsContact,
		// Walks a second apart: a change changedDemo makes reaches the
		// events feed at once.
		"EDGE_CACHE_TTL=1s",
		// Webhook endpoints live in EDGE_DATA_DIR (an edge without it
		// answers 503), and the clients' tests point theirs at a receiver
		// on loopback over http, which only these two settings allow
		// (docs/webhooks.md; the demo allows them by itself).
		"EDGE_DATA_DIR=" + filepath.Join(dir, "data"),
		"EDGE_WEBHOOK_ALLOW_HTTP=true", "EDGE_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8",
		"EDGE_LOG_LEVEL=warn", "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none",
	}
	logFile, err := os.Create(filepath.Join(dir, "edge.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile // the edge's log; shown when the start fails
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	demoCmd = cmd
	go func() { _ = cmd.Wait(); close(demoDone) }()
	d := &demo{base: public + "/v1/", docsURL: public + "/docs"}
	deadline := time.Now().Add(2 * time.Minute) // a start-up bound, not a speed assertion
	for {
		select {
		case <-demoDone:
			log, _ := os.ReadFile(logFile.Name())
			return nil, fmt.Errorf("the edge exited before serving:\n%s", log)
		default:
		}
		if res, err := http.Get(d.docsURL + "/"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return d, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the edge served no %s/ within 2 minutes", d.docsURL)
		}
		time.Sleep(50 * time.Millisecond) // outside event: the edge process binding its port
	}
}

var (
	changeOnce sync.Once
	changeErr  error
)

// changedDemo makes the demo's events feed hold changes, once for the
// package: after the edge's first walk (a list), one step of the live
// PMS's churn (a rename, a status change, a hotel replaced), then it waits
// until GET /v1/events shows them. The clients' tests follow the feed.
func changedDemo(t *testing.T, d *demo) {
	t.Helper()
	changeOnce.Do(func() {
		call := func(path string) ([]byte, error) {
			req, _ := http.NewRequest(http.MethodGet, d.base+path, nil)
			req.Header.Set("Authorization", "Bearer "+liveKey)
			req.Header.Set("User-Agent", "partnertest/1.0")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return nil, err
			}
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("%s: status %d", path, res.StatusCode)
			}
			return io.ReadAll(res.Body)
		}
		if _, changeErr = call("properties"); changeErr != nil {
			return
		}
		demoLive.Churn()
		deadline := time.Now().Add(time.Minute) // a bound on a walk a second, not a speed assertion
		for {
			body, err := call("events")
			if err == nil && strings.Contains(string(body), `"object":"event"`) {
				return
			}
			if time.Now().After(deadline) {
				changeErr = fmt.Errorf("no event a minute after the change: %v %s", err, body)
				return
			}
			time.Sleep(100 * time.Millisecond) // outside event: the edge's next walk
		}
	})
	if changeErr != nil {
		t.Fatalf("changing the demo's PMS: %v", changeErr)
	}
}

// freeAddr is a loopback address with a port free now: the edge must
// know its public URL before it listens.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
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
	for _, stop := range simStops {
		stop()
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

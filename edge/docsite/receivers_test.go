package docsite

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// The receivers the Receiving webhooks page shows work as it says
// (docs/contract.md section 26): the Go one builds and the JavaScript one
// runs, each given deliveries the edge's own signer made (webhooks.Sign):
// a delivery is 204 and applied once, its retry (the same webhook-id, a
// new timestamp) 204 and not applied again, a changed body or another
// endpoint's secret 400. The Python one parses: its library is on PyPI,
// which this machine cannot reach; its calls are those of the
// library's README (Webhook, verify, WebhookVerificationError).
func TestWebhookReceiverExamples(t *testing.T) {
	t.Run("go", func(t *testing.T) {
		t.Parallel()
		bin := filepath.Join(t.TempDir(), "receiver")
		build := exec.Command("go", "build", "-o", bin, "./examples/receiver.go")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build examples/receiver.go: %v\n%s", err, out)
		}
		if out, err := exec.Command("go", "vet", "./examples/receiver.go").CombinedOutput(); err != nil {
			t.Fatalf("go vet examples/receiver.go: %v\n%s", err, out)
		}
		checkReceiver(t, exec.Command(bin))
	})
	t.Run("javascript", func(t *testing.T) {
		t.Parallel()
		node, err := exec.LookPath("node")
		needTool(t, "node", err)
		lib, _ := filepath.Abs("../../.ci/webhooks/node_modules")
		_, err = os.Stat(filepath.Join(lib, "standardwebhooks"))
		needTool(t, "standardwebhooks (npm ci --prefix .ci/webhooks)", err)
		dir := t.TempDir() // the example beside a node_modules holding the pinned library, as npm install leaves it
		src, err := os.ReadFile("examples/receiver.mjs")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "receiver.mjs"), src, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(lib, filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
		checkReceiver(t, exec.Command(node, filepath.Join(dir, "receiver.mjs")))
	})
	t.Run("python", func(t *testing.T) {
		t.Parallel()
		py, err := exec.LookPath("python3")
		needTool(t, "python3", err)
		src, _ := filepath.Abs("examples/receiver.py")
		out, err := exec.Command(py, "-c", "import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])", src).CombinedOutput()
		if err != nil {
			t.Fatalf("examples/receiver.py does not parse: %v\n%s", err, out)
		}
	})
}

// needTool fails under CI=true, which installs every tool, and skips
// otherwise when a tool is missing.
func needTool(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required in CI: %v", what, err)
	}
	t.Skipf("%s not available: %v", what, err)
}

// lockedBuffer is a receiver's output, written by its process and read by
// the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// checkReceiver starts cmd as the page says (WEBHOOK_SECRET, PORT) and
// sends it deliveries.
func checkReceiver(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	secret := webhooks.NewSecret()
	var out lockedBuffer
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret, "PORT="+port)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(time.Minute) // a start-up bound, not a speed assertion
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receiver did not listen on %s: %v\n%s", addr, err, out.String())
		}
		time.Sleep(20 * time.Millisecond) // outside event: the receiver binding its port
	}

	const id = "evt_05p00001m81a6d5000000012t0"
	body := []byte(`{"object":"event","id":"` + id + `","type":"property.updated","occurredAt":"2026-11-22T09:42:00.000Z",` +
		`"data":{"object":"property","id":"0c8ea9b2-6a5e-4d0a-9c7b-3f1e2d4a5b6c","code":"AUR-001","name":"Aurora Harbour","status":"active"}}`)
	// deliver signs signed with key at at, and sends sent.
	deliver := func(what, key string, signed, sent []byte, at time.Time, want int) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hooks", bytes.NewReader(sent))
		req.Header.Set("Content-Type", "application/json")
		if err := webhooks.Sign(req.Header, key, id, at, signed); err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("%s: status %d, want %d\n%s", what, res.StatusCode, want, out.String())
		}
	}
	now := time.Now()
	deliver("a delivery", secret, body, body, now, http.StatusNoContent)
	deliver("its retry", secret, body, body, now.Add(5*time.Second), http.StatusNoContent)
	deliver("a changed body", secret, body, bytes.Replace(body, []byte("Harbour"), []byte("Harbor"), 1), now, http.StatusBadRequest)
	deliver("another endpoint's secret", webhooks.NewSecret(), body, body, now, http.StatusBadRequest)
	// The receiver applied the event when its answer was sent: its line
	// is in out by now.
	applied := fmt.Sprintf(`%s property.updated 0c8ea9b2-6a5e-4d0a-9c7b-3f1e2d4a5b6c "Aurora Harbour"`, id)
	if n := strings.Count(out.String(), applied); n != 1 {
		t.Errorf("the event applied %d times, want once; the receiver's output:\n%s", n, out.String())
	}
}

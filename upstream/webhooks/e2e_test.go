package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.uber.org/goleak"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// TestDeliveriesVerifyWithReferenceLibrary runs the whole path on real
// sockets: a Deliverer with the HTTPSender and the guarded client delivers
// a feed's events to a receiver on loopback (allowed, as
// EDGE_WEBHOOK_ALLOW_CIDRS would), which verifies every request with the
// Standard Webhooks reference library in Go; the JavaScript one verifies
// them too. It gets every event once, in feed
// order, each body as the feed holds it. (A retry's wait is the
// schedule's, 5 s at least: the schedule's tests run under synctest, and
// TestSendVerifiedByReferenceLibrary verifies two attempts at one event.)
func TestDeliveriesVerifyWithReferenceLibrary(t *testing.T) {
	before := goleak.IgnoreCurrent()
	secret := webhooks.NewSecret()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ids, bodies []string
	var seen []delivery
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if err := wh.Verify(b, r.Header); err != nil {
			t.Errorf("the reference library refuses a delivery: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		ids = append(ids, r.Header.Get("webhook-id"))
		bodies = append(bodies, string(b))
		seen = append(seen, delivery{Body: string(b), Headers: map[string]string{
			"webhook-id": r.Header.Get("webhook-id"), "webhook-timestamp": r.Header.Get("webhook-timestamp"),
			"webhook-signature": r.Header.Get("webhook-signature")}})
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	mem, f := &webhooks.Memory{}, &feed{}
	if err := mem.Create(context.Background(), webhooks.Endpoint{ID: "whe_1", KeyID: "key_1", URL: srv.URL + "/hooks", Secret: secret}); err != nil {
		t.Fatal(err)
	}
	f.add(3)
	allow, _ := webhooks.ParseAllow("127.0.0.0/8")
	// Now nil, the wall clock, for both: the reference library checks
	// webhook-timestamp against it (within 5 min), and the feed stamps its
	// events by it; nothing here is on a fixed day.
	s := &webhooks.HTTPSender{Client: webhooks.NewClient(webhooks.ClientConfig{Guard: webhooks.Guard{Allow: allow}}), AllowHTTP: true, Now: nil}
	d, err := webhooks.New(webhooks.Config{Store: mem, Source: f, Sender: s, Poll: time.Hour, Now: nil})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
			s.Close()
		}
	}
	defer stop()

	testkit.Eventually(t, "the first events delivered", func() bool {
		ep, _ := mem.Endpoint(ctx, "whe_1")
		return ep.After == "evt_003"
	})
	f.add(2)
	d.Wake()
	testkit.Eventually(t, "every event delivered", func() bool {
		ep, _ := mem.Endpoint(ctx, "whe_1")
		return ep.After == "evt_005"
	})
	stop()
	srv.Close()
	// Run's goroutines and the client's connections are gone with it.
	goleak.VerifyNone(t, before)
	mu.Lock()
	defer mu.Unlock()
	want := []string{"evt_001", "evt_002", "evt_003", "evt_004", "evt_005"}
	if len(ids) != len(want) {
		t.Fatalf("the receiver got %v, want %v", ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("the receiver got %v, want %v", ids, want)
		}
	}
	for i, b := range bodies {
		if b != string(f.evs[i].Body) {
			t.Errorf("delivery %d: body %s, want %s", i, b, f.evs[i].Body)
		}
	}
	verifyWithJavaScript(t, secret, seen)
}

// delivery is one request as a receiver got it, for verify.mjs.
type delivery struct {
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// verifyWithJavaScript has the Standard Webhooks JavaScript reference
// library (.ci/webhooks: npm ci --prefix .ci/webhooks) verify ds, and
// refuse them with a byte of a body changed. Without node or the library
// the check is skipped, and fails under CI=true.
func verifyWithJavaScript(t *testing.T, secret string, ds []delivery) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", ".ci", "webhooks"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks", "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node and standardwebhooks (npm ci --prefix .ci/webhooks) are required in CI: %v", err)
		}
		t.Skipf("node and standardwebhooks (npm ci --prefix .ci/webhooks) not available: %v", err)
	}
	tampered := slices.Clone(ds)
	tampered[0].Body = strings.Replace(tampered[0].Body, "evt_", "evt-", 1)
	for _, c := range []struct {
		ds   []delivery
		want string
	}{{ds, "ok"}, {tampered[:1], "fail"}} {
		b, err := json.Marshal(c.ds)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "deliveries.json")
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(node, filepath.Join(dir, "verify.mjs"), file, secret).CombinedOutput()
		if err != nil {
			t.Fatalf("verify.mjs: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) != len(c.ds) {
			t.Fatalf("verify.mjs printed %q for %d deliveries", out, len(c.ds))
		}
		for i, l := range lines {
			if !strings.HasPrefix(l, c.want) {
				t.Errorf("the JavaScript library on delivery %d: %q, want %s", i, l, c.want)
			}
		}
	}
}

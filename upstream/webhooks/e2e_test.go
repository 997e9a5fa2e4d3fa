package webhooks_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// TestDeliveriesVerifyWithReferenceLibrary runs the whole path on real
// sockets: a Deliverer with the HTTPSender and the guarded client delivers
// a feed's events to a receiver on loopback (allowed, as
// EDGE_WEBHOOK_ALLOW_CIDRS would), which verifies every request with the
// Standard Webhooks reference library. It gets every event once, in feed
// order, each body as the feed holds it. (A retry's wait is the
// schedule's, 5 s at least: the schedule's tests run under synctest, and
// TestSendVerifiedByReferenceLibrary verifies two attempts at one event.)
func TestDeliveriesVerifyWithReferenceLibrary(t *testing.T) {
	secret := webhooks.NewSecret()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ids, bodies []string
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
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	mem, f := &webhooks.Memory{}, &feed{}
	if err := mem.Create(context.Background(), webhooks.Endpoint{ID: "whe_1", KeyID: "key_1", URL: srv.URL + "/hooks", Secret: secret}); err != nil {
		t.Fatal(err)
	}
	f.add(3)
	allow, _ := webhooks.ParseAllow("127.0.0.0/8")
	s := &webhooks.HTTPSender{Client: webhooks.NewClient(webhooks.ClientConfig{Guard: webhooks.Guard{Allow: allow}}), AllowHTTP: true}
	d, err := webhooks.New(webhooks.Config{Store: mem, Source: f, Sender: s, Poll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()

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
}

package main

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// received is what a receiver verified with the Standard Webhooks
// reference library got, in order of arrival.
type received struct {
	url    string
	wh     atomic.Pointer[standardwebhooks.Webhook] // nil: secret not known yet, every request 503
	mu     sync.Mutex
	ids    []string
	bodies map[string]string
	at     map[string][]time.Time // each attempt's arrival, by webhook-id
}

// newReceiver is a receiver on loopback verifying every delivery with the
// reference library under secret; fail, when set, answers 500 to the
// attempts it returns true for (before verifying, as a receiver down).
func newReceiver(t *testing.T, secret string, fail func(id string, attempt int) bool) (*received, string) {
	t.Helper()
	rc := newLateReceiver(t, fail)
	rc.set(secret)
	return rc, rc.url
}

// set is the secret rc verifies with from now on.
func (rc *received) set(secret string) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		panic(err) // the edge's secrets always parse: a test's fault
	}
	rc.wh.Store(wh)
}

// newLateReceiver is newReceiver before its secret is known (an endpoint
// the API creates answers it): until set, every request is 503.
func newLateReceiver(t *testing.T, fail func(id string, attempt int) bool) *received {
	t.Helper()
	rc := &received{bodies: map[string]string{}, at: map[string][]time.Time{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		id := r.Header.Get("webhook-id")
		wh := rc.wh.Load()
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.at[id] = append(rc.at[id], time.Now())
		if wh == nil || fail != nil && fail(id, len(rc.at[id])) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if err := wh.Verify(b, r.Header); err != nil {
			t.Errorf("the reference library refuses delivery %s: %v", id, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if _, dup := rc.bodies[id]; dup {
			t.Errorf("%s delivered twice", id)
		}
		rc.ids = append(rc.ids, id)
		rc.bodies[id] = string(b)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL + "/hooks"
	return rc
}

func (rc *received) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.ids)
}

// startWired starts the parts of a serving edge (process.start: the feeds
// walking the PMS on the clock, the deliverer) without its listeners, so
// that a test reaches its webhooks' store directly.
func startWired(t *testing.T, env map[string]string) *process {
	t.Helper()
	cfg, err := parseSettings(nil, mapEnv(env), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	log, logs := testkit.NewLogger()
	p := &process{cfg: cfg, version: "test", stdout: io.Discard, stderr: logs, log: log}
	ctx, cancel := context.WithCancel(context.Background())
	p.onStop(p.wg.Wait)
	p.onStop(cancel)
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("edge log:\n%s", logs.String())
		}
	})
	if err := p.start(ctx, func(k string) string { return env[k] }, false); err != nil {
		t.Fatal(err)
	}
	return p
}

// startWebhookEdge runs the edge's wiring in process with EDGE_DATA_DIR,
// loopback allowed over http and the live PMS churning (walks every
// 300 ms), and returns it, the live key and the live feed's
// position once it started: where an endpoint seeded in its store begins.
func startWebhookEdge(t *testing.T) (*process, *keys.Key, string) {
	t.Helper()
	pms := churningPMS(t)
	k := newFeedKeys(t, []string{"*"})
	p := startWired(t, map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "", "EDGE_BRAND": "aurora", "EDGE_KEYS_FILE": k.file,
		"PMS_BASE_URL": pms.liveURL, "PMS_SANDBOX_URL": pms.sandboxURL, "PMS_TOKEN": "pms-secret-token",
		"EDGE_DOCS_URL": testDocsURL, "EDGE_CACHE_TTL": "300ms", "EDGE_ACCESS_LOG": "off",
		"EDGE_DATA_DIR": t.TempDir(), "EDGE_WEBHOOK_ALLOW_CIDRS": "127.0.0.0/8", "EDGE_WEBHOOK_ALLOW_HTTP": "true",
	})
	if p.hooks == nil {
		t.Fatal("webhooks are off with EDGE_DATA_DIR")
	}
	liveKey, _ := p.store.Lookup(k.live)
	var start string
	testkit.Eventually(t, "the live feed started", func() bool {
		var err error
		start, err = p.hooks.Source.Position(context.Background(), liveKey.ID)
		return err == nil
	})
	return p, liveKey, start
}

// docs/webhooks.md through the edge's own wiring, the endpoints seeded in
// its store (the routes that create them are the API's): with
// EDGE_DATA_DIR and loopback allowed over http, the live PMS churning and
// no partner calling, a receiver verifying with the reference library gets
// each event the key may see once, in feed order, each body the bytes
// GET /v1/events serves; a receiver that fails the first attempt gets the
// same webhook-id again after the schedule's 5 s.
func TestWebhooksDeliverTheFeed(t *testing.T) {
	t.Parallel()
	p, liveKey, start := startWebhookEdge(t)
	ctx := context.Background()

	secret := webhooks.NewSecret()
	ok, okURL := newReceiver(t, secret, nil)
	flaky, flakyURL := newReceiver(t, secret, func(_ string, attempt int) bool { return attempt == 1 })
	for i, u := range []string{okURL, flakyURL} {
		ep := webhooks.Endpoint{ID: "whe_" + string(rune('a'+i)), KeyID: liveKey.ID, URL: u, Secret: secret,
			CreatedAt: time.Now(), Status: webhooks.StatusEnabled, Progress: webhooks.Progress{After: start}}
		if err := p.hooks.Registry.Create(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	p.hooks.Deliverer.Wake()
	testkit.Eventually(t, "a dozen events delivered", func() bool { return ok.count() >= 12 })

	// What the receiver got is the feed after the endpoint's start, in
	// order, with the bytes of a page of GET /v1/events.
	ok.mu.Lock()
	ids := append([]string(nil), ok.ids...)
	bodies := maps.Clone(ok.bodies)
	ok.mu.Unlock()
	evs, _, err := p.feeds.Live.Read(ctx, start, true, len(ids), liveKey)
	if err != nil {
		t.Fatal(err)
	}
	page, _, err := p.feeds.Live.AppendPage(ctx, nil, start, true, len(ids), liveKey)
	if err != nil {
		t.Fatal(err)
	}
	var joined []string
	for i, e := range evs {
		if ids[i] != e.ID {
			t.Fatalf("delivery %d is %s; the feed's event %d is %s (delivered %v)", i, ids[i], i, e.ID, ids)
		}
		joined = append(joined, bodies[e.ID])
	}
	if strings.Join(joined, ",") != string(page) {
		t.Errorf("the bodies delivered are not the page's bytes:\n%s\nwant\n%s", strings.Join(joined, ","), page)
	}

	// The flaky receiver: the first event refused once, then the same
	// webhook-id again after the schedule's first wait.
	testkit.Eventually(t, "the refused event delivered on its retry", func() bool { return flaky.count() >= 1 })
	flaky.mu.Lock()
	first := flaky.ids[0]
	tries := flaky.at[first]
	flaky.mu.Unlock()
	if first != ids[0] || len(tries) != 2 {
		t.Fatalf("the flaky receiver's first delivery %s after %d attempts; want %s after 2", first, len(tries), ids[0])
	}
	if gap := tries[1].Sub(tries[0]); gap < webhooks.Retries[0] {
		t.Errorf("the retry came %s after the failed attempt; want at least %s", gap, webhooks.Retries[0])
	}
}

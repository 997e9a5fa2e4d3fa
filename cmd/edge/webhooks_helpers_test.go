package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
)

// The helpers of the webhook tests through the binary that restart and
// kill edges (webhooks_resume_test.go) and probe the address guard
// (webhooks_guard_test.go).

// hookKey is a live key of aurora with properties:read and
// webhooks:manage, and the key file holding it.
func hookKey(t *testing.T) feedKeys {
	t.Helper()
	token, rec := keystest.Mint(t, "aurora", keys.ModeLive)
	rec.Scopes = []string{keys.ScopePropertiesRead, keys.ScopeWebhooksManage}
	return feedKeys{file: keystest.File(t, rec), live: token}
}

// hookEndpoint is a WebhookEndpoint as the API answers it.
type hookEndpoint struct {
	ID, URL, Status, Secret string
	DisabledReason          *string
}

// createHook creates an endpoint for url through p (POST
// /v1/webhook-endpoints) and fails t unless it is 201 with an id and a
// secret.
func (p partner) createHook(t *testing.T, url string) hookEndpoint {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.base+"webhook-endpoints", strings.NewReader(`{"url":"`+url+`"}`))
	req.Header.Set("Authorization", "Bearer "+p.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var created struct{ Data hookEndpoint }
	if res.StatusCode != http.StatusCreated || json.Unmarshal(body, &created) != nil ||
		!strings.HasPrefix(created.Data.ID, "whe_") || created.Data.Secret == "" {
		t.Fatalf("POST /v1/webhook-endpoints %s: %d %s; want 201 with an id and the secret", url, res.StatusCode, body)
	}
	return created.Data
}

// listHooks lists the key's endpoints (GET /v1/webhook-endpoints).
func (p partner) listHooks(t *testing.T) []hookEndpoint {
	t.Helper()
	code, body := p.get(t, "webhook-endpoints")
	var l struct{ Data []hookEndpoint }
	if code != http.StatusOK || json.Unmarshal(body, &l) != nil {
		t.Fatalf("GET /v1/webhook-endpoints: %d %s", code, body)
	}
	return l.Data
}

// feedAfter is every event GET /v1/events serves after the cursor after,
// each as served.
func (p partner) feedAfter(t *testing.T, after string) []json.RawMessage {
	t.Helper()
	var feed []json.RawMessage
	for {
		code, body := p.get(t, "events?limit=100&after="+after)
		var pg struct {
			Data []json.RawMessage `json:"data"`
			Meta struct {
				Events struct {
					Next    string `json:"next"`
					HasMore bool   `json:"hasMore"`
				} `json:"events"`
			} `json:"meta"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &pg) != nil {
			t.Fatalf("events after %s: %d %s", after, code, body)
		}
		feed, after = append(feed, pg.Data...), pg.Meta.Events.Next
		if !pg.Meta.Events.HasMore {
			return feed
		}
	}
}

// assertFeedRun fails t unless ids (each delivered with bodies[id]) are
// a run of feed with no gap: the first is somewhere in it, each next one
// is the feed's next event, byte for byte as GET /v1/events serves it.
func assertFeedRun(t *testing.T, feed []json.RawMessage, ids []string, bodies map[string]string) {
	t.Helper()
	if len(ids) == 0 {
		t.Fatal("nothing delivered")
	}
	first := -1
	for i, raw := range feed {
		var e struct{ ID string }
		if json.Unmarshal(raw, &e) == nil && e.ID == ids[0] {
			first = i
		}
	}
	if first < 0 || first+len(ids) > len(feed) {
		t.Fatalf("the %d deliveries from %s are not a run of the %d events of the feed", len(ids), ids[0], len(feed))
	}
	for i, id := range ids {
		if got, want := bodies[id], string(feed[first+i]); got != want {
			t.Fatalf("delivery %d (%s) is\n%s\nthe feed's next event is\n%s\n(delivered: %v)", i, id, got, want, ids)
		}
	}
}

// arrival is one request a hookReceiver got.
type arrival struct {
	id     string
	at     time.Time
	status int // what it answered; 0: held until the edge went
}

// hookReceiver is a receiver on loopback keeping every request it gets in
// order of arrival, each verified with the Standard Webhooks reference
// library once its secret is set (before: 503, not kept, as for an
// endpoint whose creation has not answered yet).
type hookReceiver struct {
	url    string
	wh     atomic.Pointer[standardwebhooks.Webhook]
	answer atomic.Int32 // the status of verified requests; 0: 204
	// hold, when set, holds the next verified request without answering
	// until its connection closes (the edge killed mid-attempt).
	hold atomic.Bool
	// ready is closed by the first set: a request that arrives before the
	// test knows the secret (the edge may deliver before createHook has
	// returned to the test) waits for it instead of going unrecorded.
	ready     chan struct{}
	readyOnce sync.Once

	mu     sync.Mutex
	got    []arrival
	bodies map[string]string
	held   string // the id of the request held, once one was
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{bodies: map[string]string{}, ready: make(chan struct{})}
	done := make(chan struct{}) // lets a held request go when the test ends
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		id := r.Header.Get("webhook-id")
		select {
		case <-rc.ready:
		case <-r.Context().Done():
		case <-done:
		}
		wh := rc.wh.Load()
		if wh == nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if err := wh.Verify(b, r.Header); err != nil {
			t.Errorf("the reference library refuses delivery %s: %v", id, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		status := int(rc.answer.Load())
		if status == 0 {
			status = http.StatusNoContent
		}
		held := rc.hold.CompareAndSwap(true, false)
		if held {
			status = 0
		}
		rc.mu.Lock()
		if prev, ok := rc.bodies[id]; ok && prev != string(b) {
			t.Errorf("%s arrived again with another body:\n%s\nthen\n%s", id, prev, b)
		}
		rc.bodies[id] = string(b)
		rc.got = append(rc.got, arrival{id: id, at: time.Now(), status: status})
		if held {
			rc.held = id
		}
		rc.mu.Unlock()
		if held {
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // before srv.Close, which waits for handlers
	rc.url = srv.URL + "/hooks"
	return rc
}

// set is the secret rc verifies with from now on.
func (rc *hookReceiver) set(secret string) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		panic(err) // the edge's secrets always parse: a test's fault
	}
	rc.wh.Store(wh)
	rc.readyOnce.Do(func() { close(rc.ready) })
}

// arrivals is a copy of what arrived so far, and the held request's id.
func (rc *hookReceiver) arrivals() ([]arrival, string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]arrival(nil), rc.got...), rc.held
}

// delivered are the ids answered 2xx, in order of arrival.
func (rc *hookReceiver) delivered() []string {
	got, _ := rc.arrivals()
	var ids []string
	for _, a := range got {
		if a.status >= 200 && a.status < 300 {
			ids = append(ids, a.id)
		}
	}
	return ids
}

// body is what arrived for id.
func (rc *hookReceiver) body(id string) string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.bodies[id]
}

package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// `edge webhooks receive` through the built binary: a delivery signed as
// the edge signs it is printed (webhook-id, type, property id) and
// answered 204; one whose body changed, or signed with another secret, is
// 400 and printed nowhere on stdout.
func TestWebhooksReceiveCommand(t *testing.T) {
	t.Parallel()
	secret := webhooks.NewSecret()
	cmd := exec.Command(buildEdge(t), "webhooks", "receive", "--addr", "127.0.0.1:0", "--secret", secret)
	stdout, stderr := &testkit.LogBuffer{}, &testkit.LogBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	var url string
	re := regexp.MustCompile(`receiving webhooks on (http://\S+/)`)
	testkit.Eventually(t, "the receiver listening", func() bool {
		m := re.FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	body := []byte(`{"object":"event","id":"evt_1","type":"property.updated","occurredAt":"2026-01-01T00:00:00.000Z","data":{"id":"5f0c6a5e-8d2b-4c1e-9a7f-1b2c3d4e5f60","name":"Aurora"}}`)
	post := func(b []byte, key string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url+"hooks", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if err := webhooks.Sign(req.Header, key, "evt_1", time.Now(), body); err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post(body, secret); code != http.StatusNoContent {
		t.Fatalf("a signed delivery: %d; want 204\n%s", code, stderr.String())
	}
	testkit.Eventually(t, "the event printed", func() bool {
		return stdout.String() == "evt_1 property.updated 5f0c6a5e-8d2b-4c1e-9a7f-1b2c3d4e5f60\n"
	})
	if code := post(bytes.Replace(body, []byte("Aurora"), []byte("Aurore"), 1), secret); code != http.StatusBadRequest {
		t.Errorf("a changed body: %d; want 400", code)
	}
	if code := post(body, webhooks.NewSecret()); code != http.StatusBadRequest {
		t.Errorf("another secret's signature: %d; want 400", code)
	}
	if n := strings.Count(stdout.String(), "\n"); n != 1 {
		t.Errorf("stdout has %d lines after two refusals; want the one event:\n%s", n, stdout.String())
	}
}

// docs/webhooks.md through the built binary and the API: with
// EDGE_DATA_DIR, loopback allowed over http and the live PMS churning, an
// endpoint created by POST /v1/webhook-endpoints receives, verified by the
// reference library, each event of GET /v1/events after its creation once,
// in feed order, with those bytes, no partner calling meanwhile; an
// endpoint whose receiver fails the first attempt gets the same webhook-id
// after 5 s. Skipped while the edge has no such route (404).
func TestWebhooksThroughTheBinary(t *testing.T) {
	t.Parallel()
	pms := churningPMS(t)
	token, rec := keystest.Mint(t, "aurora", keys.ModeLive)
	rec.Scopes = []string{keys.ScopePropertiesRead, keys.ScopeWebhooksManage}
	k := feedKeys{file: keystest.File(t, rec), live: token}
	base := startFeedEdge(t, pms, k, "EDGE_DATA_DIR="+t.TempDir(),
		"EDGE_WEBHOOK_ALLOW_CIDRS=127.0.0.0/8", "EDGE_WEBHOOK_ALLOW_HTTP=true")
	p := partner{base, k.live}
	_, cursor := p.list(t) // every event after it is the feed a partner follows

	create := func(url string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"webhook-endpoints", strings.NewReader(`{"url":"`+url+`"}`))
		req.Header.Set("Authorization", "Bearer "+k.live)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode == http.StatusNotFound {
			t.Skip("POST /v1/webhook-endpoints answers 404: the edge has no webhook routes yet")
		}
		var created struct {
			Data struct{ Secret string } `json:"data"`
		}
		if res.StatusCode != http.StatusCreated || json.NewDecoder(res.Body).Decode(&created) != nil || created.Data.Secret == "" {
			t.Fatalf("POST /v1/webhook-endpoints: %d; want 201 with the secret", res.StatusCode)
		}
		return created.Data.Secret
	}
	// A receiver needs the secret the creation answers: each receiver
	// serves with a secret set once it is known.
	ok := newLateReceiver(t, nil)
	flaky := newLateReceiver(t, func(_ string, attempt int) bool { return attempt == 1 })
	ok.set(create(ok.url))
	flaky.set(create(flaky.url))

	testkit.Eventually(t, "a dozen events delivered", func() bool { return ok.count() >= 12 })
	ok.mu.Lock()
	ids := append([]string(nil), ok.ids...)
	bodies := make(map[string]string, len(ok.bodies))
	for id, b := range ok.bodies {
		bodies[id] = b
	}
	ok.mu.Unlock()
	// The events GET /v1/events serves after the list's cursor, each
	// body as served: the deliveries are a run of them, in order.
	assertFeedRun(t, p.feedAfter(t, cursor), ids, bodies)
	testkit.Eventually(t, "the refused event delivered on its retry", func() bool { return flaky.count() >= 1 })
	flaky.mu.Lock()
	tries := flaky.at[flaky.ids[0]]
	flaky.mu.Unlock()
	if len(tries) != 2 || tries[1].Sub(tries[0]) < webhooks.Retries[0] {
		t.Errorf("the flaky receiver's first event came after %d attempts %v; want 2, %s apart", len(tries), tries, webhooks.Retries[0])
	}
}

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// README.md: the banner's webhook lines work as printed. Its curl creates
// an endpoint at the loopback receiver with the demo's live key (which
// holds webhooks:manage: docs/contract.md section 26): 201, a Location and
// the secret the receiver line needs; the test key may list its own.
func TestDemoBannerCreatesAWebhookEndpoint(t *testing.T) {
	t.Parallel()
	s := start(t, map[string]string{"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "off"})
	base := s.waitFor(t, urlLine)[1]
	waitHealthy(t, base)
	ks := s.waitFor(t, keyLines)
	line := s.waitFor(t, regexp.MustCompile(`curl -H 'Authorization: Bearer (\S+)' -H '(Content-Type: application/json)' \\\n\s+-d '([^']+)' (\S+/v1/webhook-endpoints)\n`))
	if line[1] != ks[1] {
		t.Errorf("the webhook line uses %s, want the live key", line[1])
	}
	s.waitFor(t, regexp.MustCompile(`webhooks receive --addr `+regexp.QuoteMeta(demoReceiver)+` --secret whsec_`))

	req, _ := http.NewRequest(http.MethodPost, line[4], strings.NewReader(line[3]))
	req.Header.Set("Authorization", "Bearer "+line[1])
	req.Header.Set("Content-Type", strings.TrimPrefix(line[2], "Content-Type: "))
	req.Header.Set("User-Agent", "curl/8.0")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var created struct {
		Data struct{ ID, URL, Status, Secret string } `json:"data"`
	}
	if res.StatusCode != http.StatusCreated || json.Unmarshal(body, &created) != nil {
		t.Fatalf("the banner's curl: %d %s", res.StatusCode, body)
	}
	if loc := res.Header.Get("Location"); loc != "/v1/webhook-endpoints/"+created.Data.ID || created.Data.URL != "http://"+demoReceiver+"/hooks" ||
		created.Data.Status != "enabled" || !strings.HasPrefix(created.Data.Secret, "whsec_") {
		t.Errorf("the banner's curl: Location %q, %s", loc, body)
	}

	code, listed := partner{base, ks[2]}.get(t, "webhook-endpoints")
	if code != http.StatusOK || !strings.Contains(string(listed), `"data":[]`) {
		t.Errorf("the test key's endpoints: %d %s", code, listed)
	}
}

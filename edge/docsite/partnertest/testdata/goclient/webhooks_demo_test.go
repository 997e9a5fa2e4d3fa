// Copied, with client_demo_test.go, next to the client oapi-codegen
// generates from docs/openapi.yaml, and run there by partnertest's
// TestGoClientWebhooksAgainstDemo.
package goclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A partner's Go client manages a webhook endpoint through the five
// operations (docs/contract.md section 26): create one pointing at a
// receiver on loopback (201, Location, the secret shown this once), list
// and get it without its secret, enable it while enabled (200, the
// endpoint as it is), the same url again a typed 409, delete it (204),
// then get, enable and delete it are typed 404s. Every answer decodes
// into its generated type.
func TestGoClientWebhookEndpoints(t *testing.T) {
	if demoBase == "" {
		t.Fatal("DEMO_BASE unset: this test runs from partnertest's TestGoClientWebhooksAgainstDemo")
	}
	var received atomic.Int64 // deliveries are not this test's subject: the receiver only answers them
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()

	ctx := context.Background()
	c, err := NewClientWithResponses(strings.TrimSuffix(demoBase, "/"), WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+liveKey)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	const ua = "partnertest-go/1.0"
	decodes := func(what string, body []byte, v any) {
		t.Helper()
		if err := strictDecode(body, v); err != nil {
			t.Errorf("%s: decode mismatch: %v", what, err)
		}
	}

	url, desc := receiver.URL+"/hook", "partnertest's receiver"
	created, err := c.CreateWebhookEndpointWithResponse(ctx, &CreateWebhookEndpointParams{UserAgent: ua},
		WebhookEndpointCreate{Url: url, Description: &desc})
	if err != nil || created.JSON201 == nil || created.Headers201 == nil {
		t.Fatalf("create: %v, status %d: %s", err, created.StatusCode(), created.Body)
	}
	decodes("create", created.Body, new(WebhookEndpointCreated))
	ep := created.JSON201.Data
	if created.Headers201.Location != "/v1/webhook-endpoints/"+ep.Id || ep.Url != url || ep.Status != WebhookEndpointCreatedDataStatusEnabled ||
		!strings.HasPrefix(ep.Secret, "whsec_") || ep.Description == nil || *ep.Description != desc || ep.DisabledReason != nil {
		t.Errorf("create: Location %q, %s", created.Headers201.Location, created.Body)
	}
	id := ep.Id

	list, err := c.ListWebhookEndpointsWithResponse(ctx, &ListWebhookEndpointsParams{UserAgent: ua})
	if err != nil || list.JSON200 == nil {
		t.Fatalf("list: %v, status %d: %s", err, list.StatusCode(), list.Body)
	}
	decodes("list", list.Body, new(WebhookEndpointList))
	found := 0
	for _, e := range list.JSON200.Data {
		if e.Id == id && e.Url == url && e.Status == WebhookEndpointStatusEnabled {
			found++
		}
	}
	if found != 1 || strings.Contains(string(list.Body), `"secret"`) {
		t.Errorf("list: the endpoint %d times, or a secret: %s", found, list.Body)
	}

	got, err := c.GetWebhookEndpointWithResponse(ctx, id, &GetWebhookEndpointParams{UserAgent: ua})
	if err != nil || got.JSON200 == nil {
		t.Fatalf("get: %v, status %d: %s", err, got.StatusCode(), got.Body)
	}
	decodes("get", got.Body, new(WebhookEndpointResponse))
	if d := got.JSON200.Data; d.Id != id || d.Secret != nil || d.Object != WebhookEndpointObjectWebhookEndpoint || d.CreatedAt != ep.CreatedAt {
		t.Errorf("get: %s", got.Body)
	}

	// Enabling an enabled endpoint changes nothing: 200 and the endpoint
	// as it is.
	en, err := c.EnableWebhookEndpointWithResponse(ctx, id, &EnableWebhookEndpointParams{UserAgent: ua})
	if err != nil || en.JSON200 == nil {
		t.Fatalf("enable: %v, status %d: %s", err, en.StatusCode(), en.Body)
	}
	decodes("enable", en.Body, new(WebhookEndpointResponse))
	if d := en.JSON200.Data; d.Id != id || d.Status != WebhookEndpointStatusEnabled || d.DisabledReason != nil || d.Secret != nil {
		t.Errorf("enable: %s", en.Body)
	}

	again, err := c.CreateWebhookEndpointWithResponse(ctx, &CreateWebhookEndpointParams{UserAgent: ua}, WebhookEndpointCreate{Url: url})
	if err != nil || again.ApplicationproblemJSON409 == nil {
		t.Fatalf("the same url again: %v, status %d: %s", err, again.StatusCode(), again.Body)
	}
	if p := again.ApplicationproblemJSON409; p.Code != WebhookEndpointConflictProblemCodeWEBHOOKENDPOINTEXISTS || p.Status != 409 {
		t.Errorf("the same url again: %+v", p)
	}
	decodes("409", again.Body, new(WebhookEndpointConflictProblem))

	del, err := c.DeleteWebhookEndpointWithResponse(ctx, id, &DeleteWebhookEndpointParams{UserAgent: ua})
	if err != nil || del.StatusCode() != http.StatusNoContent || len(del.Body) != 0 {
		t.Fatalf("delete: %v, status %d: %s", err, del.StatusCode(), del.Body)
	}

	// Gone: each route that names it is a typed 404.
	notFound := func(what string, status int, p *WebhookEndpointNotFoundProblem, body []byte) {
		t.Helper()
		if p == nil || p.Code != WebhookEndpointNotFoundProblemCodeWEBHOOKENDPOINTNOTFOUND || p.Status != 404 {
			t.Errorf("%s after delete: status %d: %s", what, status, body)
			return
		}
		decodes(what+" 404", body, new(WebhookEndpointNotFoundProblem))
	}
	if g, err := c.GetWebhookEndpointWithResponse(ctx, id, &GetWebhookEndpointParams{UserAgent: ua}); err != nil {
		t.Fatal(err)
	} else {
		notFound("get", g.StatusCode(), g.ApplicationproblemJSON404, g.Body)
	}
	if e, err := c.EnableWebhookEndpointWithResponse(ctx, id, &EnableWebhookEndpointParams{UserAgent: ua}); err != nil {
		t.Fatal(err)
	} else {
		notFound("enable", e.StatusCode(), e.ApplicationproblemJSON404, e.Body)
	}
	if d, err := c.DeleteWebhookEndpointWithResponse(ctx, id, &DeleteWebhookEndpointParams{UserAgent: ua}); err != nil {
		t.Fatal(err)
	} else {
		notFound("delete", d.StatusCode(), d.ApplicationproblemJSON404, d.Body)
	}
	t.Logf("Go client: webhook endpoint %s created (201, Location, secret), listed and got without its secret, enabled (200 as it was), 409 for its url again, deleted (204), then 404 to get, enable and delete; the receiver answered %d deliveries",
		id, received.Load())
}

package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// webhookExposition is the partner_edge_webhooks_* series of an edge that
// delivered an event (docs/webhooks.md, "Seen from outside"): the lag's
// histogram exists only after a delivery, which the edge of
// TestRulesAndDashboardMatchMetrics, walking once an hour, never makes. An
// edge of its own, on a churning PMS with an endpoint seeded in its store
// at a receiver on loopback, delivers within a walk or two.
func webhookExposition(t *testing.T) exposition {
	t.Helper()
	p, liveKey, start := startWebhookEdge(t)
	ctx := context.Background()
	secret := webhooks.NewSecret()
	rc, url := newReceiver(t, secret, nil)
	ep := webhooks.Endpoint{ID: "whe_metrics", KeyID: liveKey.ID, URL: url, Secret: secret,
		CreatedAt: time.Now(), Status: webhooks.StatusEnabled, Progress: webhooks.Progress{After: start}}
	if err := p.hooks.Registry.Create(ctx, ep); err != nil {
		t.Fatal(err)
	}
	p.hooks.Deliverer.Wake()
	testkit.Eventually(t, "an event delivered", func() bool { return rc.count() >= 1 })
	var series exposition
	testkit.Eventually(t, "the delivery's lag and the endpoint scanned are in the metrics", func() bool {
		rec := httptest.NewRecorder()
		p.tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		series = parseExposition(t, rec.Body.String())
		for _, ls := range series["partner_edge_webhooks_endpoints"] {
			if ls.Get("status") == "enabled" && strings.Contains(rec.Body.String(), "partner_edge_webhooks_lag_seconds_bucket{") {
				return true
			}
		}
		return false
	})
	for name := range series {
		if !strings.HasPrefix(name, "partner_edge_webhooks_") {
			delete(series, name)
		}
	}
	return series
}

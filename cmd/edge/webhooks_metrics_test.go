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
	ctx := context.Background()
	var start string
	testkit.Eventually(t, "the live feed started", func() bool {
		var err error
		start, err = p.hooks.Source.Position(ctx, liveKey.ID)
		return err == nil
	})
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

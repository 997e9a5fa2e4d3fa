package observability

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

// slotCtx is a request context that answers its CacheSlot, as the edge's
// does.
type slotCtx struct {
	context.Context
	slot CacheSlot
}

func (c *slotCtx) Value(k any) any {
	if _, ok := k.(CacheSlotKey); ok {
		return &c.slot
	}
	return c.Context.Value(k)
}

// docs/operations.md, "Production kit": the request duration carries the cache outcome the cache
// reported for that request (the first one), so the latency SLO can tell
// hits from misses; requests the cache did not answer carry none. Shed
// requests and TLS reloads are counted.
func TestRequestDurationByCacheOutcome(t *testing.T) {
	tel, _, _ := newTest(t, nil)
	m := tel.Metrics()
	// The labels the cache sets (upstream/cache's vocabulary, made up here:
	// observability knows none of it).
	hit := attribute.String("partner_edge.cache.outcome", "hit")
	miss := attribute.String("partner_edge.cache.outcome", "miss")
	bg := context.Background()
	for _, tc := range []struct {
		outcomes []*attribute.KeyValue
		elapsed  time.Duration
	}{
		{[]*attribute.KeyValue{&hit}, 2 * time.Millisecond},
		{[]*attribute.KeyValue{&hit}, 3 * time.Millisecond},
		{[]*attribute.KeyValue{&miss, &hit}, 300 * time.Millisecond}, // the first wins
		{nil, time.Millisecond},
	} {
		ctx := &slotCtx{Context: bg}
		m.RequestStarted(ctx, "GET")
		for _, o := range tc.outcomes {
			ctx.slot.Set(o)
		}
		m.RequestDone(ctx, "GET", "/v1/properties", 200, tc.elapsed)
	}
	m.Shed(bg)
	m.Shed(bg)
	m.TLSReload(bg, false)
	m.TLSReload(bg, true)
	m.TLSReload(bg, false)

	fams := testkit.Scrape(t, tel.MetricsHandler())
	base := map[string]string{"http_request_method": "GET", "http_route": "/v1/properties", "http_response_status_code": "200"}
	with := func(o string) map[string]string {
		l := map[string]string{"partner_edge_cache_outcome": o}
		for k, v := range base {
			l[k] = v
		}
		return l
	}
	if n := testkit.Series(t, fams, "http_server_request_duration_seconds", with("hit")).GetHistogram().GetSampleCount(); n != 2 {
		t.Errorf("hits: %d, want 2", n)
	}
	if n := testkit.Series(t, fams, "http_server_request_duration_seconds", with("miss")).GetHistogram().GetSampleCount(); n != 1 {
		t.Errorf("misses: %d, want 1", n)
	}
	var plain uint64
	for _, s := range fams["http_server_request_duration_seconds"].GetMetric() {
		has := false
		for _, l := range s.GetLabel() {
			has = has || l.GetName() == "partner_edge_cache_outcome"
		}
		if !has {
			plain += s.GetHistogram().GetSampleCount()
		}
	}
	if plain != 1 {
		t.Errorf("requests without a cache outcome: %d, want 1", plain)
	}
	if got := counter(t, fams, "partner_edge_requests_shed_total", nil); got != 2 {
		t.Errorf("shed = %v, want 2", got)
	}
	if got := counter(t, fams, "partner_edge_tls_reloads_total", map[string]string{"result": "failed"}); got != 2 {
		t.Errorf("TLS reloads failed = %v, want 2", got)
	}
	if got := counter(t, fams, "partner_edge_tls_reloads_total", map[string]string{"result": "ok"}); got != 1 {
		t.Errorf("TLS reloads ok = %v, want 1", got)
	}
}

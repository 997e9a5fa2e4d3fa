package observability

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
)

func counter(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	return testkit.Series(t, fams, name, want).GetCounter().GetValue()
}

func TestPrometheusExposesEveryInstrument(t *testing.T) {
	tel, _, _ := newTest(t, nil)
	m := tel.Metrics()
	ctx := context.Background()

	// Two requests on a route (one 200, one 502) and a 404 with no route.
	for _, status := range []int{200, 502} {
		m.RequestStarted(ctx, "GET")
		m.RequestDone(ctx, "GET", "/v1/properties/{propertyId}", status, 30*time.Millisecond)
	}
	m.RequestStarted(ctx, "BREW")
	m.RequestDone(ctx, "BREW", "", 404, time.Millisecond)
	m.RequestStarted(ctx, "GET") // still in flight at scrape time

	m.KeyReload(ctx, true)
	m.KeyReload(ctx, false)
	m.KeyReload(ctx, true)
	m.Problem(ctx, string(problem.BadGateway))
	m.Problem(ctx, "not a code")

	fams := testkit.Scrape(t, tel.MetricsHandler())

	h := testkit.Series(t, fams, "http_server_request_duration_seconds",
		map[string]string{"http_request_method": "GET", "http_route": "/v1/properties/{propertyId}", "http_response_status_code": "502"}).GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() < 0.029 || h.GetSampleSum() > 0.031 {
		t.Errorf("request duration 502: count %d sum %v, want 1 and 0.03", h.GetSampleCount(), h.GetSampleSum())
	}
	if n := len(h.GetBucket()); n != len(DurationBuckets())+1 { // + the +Inf bucket
		t.Errorf("request duration has %d buckets, want the %d semconv ones and +Inf", n, len(DurationBuckets()))
	}
	other := testkit.Series(t, fams, "http_server_request_duration_seconds",
		map[string]string{"http_request_method": "_OTHER", "http_response_status_code": "404"})
	for _, l := range other.GetLabel() {
		if l.GetName() == "http_route" {
			t.Errorf("unmatched request carries http_route=%q", l.GetValue())
		}
	}
	if got := testkit.Series(t, fams, "http_server_active_requests", map[string]string{"http_request_method": "GET"}).GetGauge().GetValue(); got != 1 {
		t.Errorf("active GET requests = %v, want 1", got)
	}
	if got := testkit.Series(t, fams, "http_server_active_requests", map[string]string{"http_request_method": "_OTHER"}).GetGauge().GetValue(); got != 0 {
		t.Errorf("active _OTHER requests = %v, want 0", got)
	}

	for result, want := range map[string]float64{"ok": 2, "failed": 1} {
		if got := counter(t, fams, "partner_edge_keys_reloads_total", map[string]string{"result": result}); got != want {
			t.Errorf("key reloads %s = %v, want %v", result, got, want)
		}
	}
	for code, want := range map[string]float64{"BAD_GATEWAY": 1, "INTERNAL_ERROR": 1} {
		if got := counter(t, fams, "partner_edge_problem_responses_total", map[string]string{"code": code}); got != want {
			t.Errorf("problems %s = %v, want %v", code, got, want)
		}
	}
}

// The attribute-set cache is bounded: label combinations past maxReqSets are
// still recorded, but not kept.
func TestRequestSetCacheIsBounded(t *testing.T) {
	tel, _, _ := newTest(t, nil)
	m := tel.Metrics()
	for i := range maxReqSets + 50 {
		m.RequestDone(context.Background(), "GET", "/r", 100+i, time.Millisecond)
	}
	if n := len(*m.reqOpts.Load()); n != maxReqSets {
		t.Errorf("cache holds %d sets, want %d", n, maxReqSets)
	}
	fams := testkit.Scrape(t, tel.MetricsHandler())
	if n := len(fams["http_server_request_duration_seconds"].GetMetric()); n != maxReqSets+50 {
		t.Errorf("%d series recorded, want %d", n, maxReqSets+50)
	}
}

// BenchmarkRequestMetrics is the metric cost of one cached-path request: in
// flight up and down, the duration (the cache hit's count is
// upstream/cache's BenchmarkLookupMetrics).
func BenchmarkRequestMetrics(b *testing.B) {
	tel, err := New(context.Background(), Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	m := tel.Metrics()
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.RequestStarted(ctx, "GET")
			m.RequestDone(ctx, "GET", "/v1/properties", 200, 3*time.Millisecond)
		}
	})
}

// The failed-auth throttle's counter is exposed at 0 before any refusal.
func TestAuthThrottledCounter(t *testing.T) {
	tel, _, _ := newTest(t, nil)
	if got := counter(t, testkit.Scrape(t, tel.MetricsHandler()), "partner_edge_auth_throttled_total", nil); got != 0 {
		t.Errorf("before any refusal: %v, want 0", got)
	}
	tel.Metrics().AuthThrottled(context.Background())
	tel.Metrics().AuthThrottled(context.Background())
	if got := counter(t, testkit.Scrape(t, tel.MetricsHandler()), "partner_edge_auth_throttled_total", nil); got != 2 {
		t.Errorf("after two refusals: %v, want 2", got)
	}
}

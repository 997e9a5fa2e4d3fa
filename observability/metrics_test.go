package observability

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/partner-edge/partner-edge/problem"
)

// scrape GETs h and parses the Prometheus text exposition.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// series finds the one series of family name whose labels include want.
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Metric {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("metric %s not exposed", name)
	}
	var found *dto.Metric
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if match {
			if found != nil {
				t.Fatalf("%s%v matches more than one series", name, want)
			}
			found = m
		}
	}
	if found == nil {
		t.Fatalf("%s%v: no such series", name, want)
	}
	return found
}

func counter(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	return series(t, fams, name, want).GetCounter().GetValue()
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

	// One failing PMS call: three attempts, two retries, breaker opened.
	live := m.PMS("live")
	sandbox := m.PMS("sandbox")
	live.Attempt(ctx, PMSHTTP5xx, 100*time.Millisecond)
	live.Retry(ctx, PMSHTTP5xx)
	live.Attempt(ctx, PMSTimeout, 2*time.Second)
	live.Retry(ctx, PMSTimeout)
	live.Attempt(ctx, PMSHTTP5xx, 100*time.Millisecond)
	live.BreakerState(ctx, BreakerOpen)
	live.Cache(ctx, CacheMiss)
	live.Cache(ctx, CacheStale)
	live.Cache(ctx, CacheStale)
	live.Cache(ctx, "bogus")
	sandbox.Cache(ctx, CacheHit)
	sandbox.Cache(ctx, CacheCoalesced)

	m.KeyReload(ctx, true)
	m.KeyReload(ctx, false)
	m.KeyReload(ctx, true)
	m.Problem(ctx, string(problem.BadGateway))
	m.Problem(ctx, "not a code")

	fams := scrape(t, tel.MetricsHandler())

	h := series(t, fams, "http_server_request_duration_seconds",
		map[string]string{"http_request_method": "GET", "http_route": "/v1/properties/{propertyId}", "http_response_status_code": "502"}).GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() < 0.029 || h.GetSampleSum() > 0.031 {
		t.Errorf("request duration 502: count %d sum %v, want 1 and 0.03", h.GetSampleCount(), h.GetSampleSum())
	}
	if n := len(h.GetBucket()); n != len(durationBuckets)+1 { // + the +Inf bucket
		t.Errorf("request duration has %d buckets, want the %d semconv ones and +Inf", n, len(durationBuckets))
	}
	other := series(t, fams, "http_server_request_duration_seconds",
		map[string]string{"http_request_method": "_OTHER", "http_response_status_code": "404"})
	for _, l := range other.GetLabel() {
		if l.GetName() == "http_route" {
			t.Errorf("unmatched request carries http_route=%q", l.GetValue())
		}
	}
	if got := series(t, fams, "http_server_active_requests", map[string]string{"http_request_method": "GET"}).GetGauge().GetValue(); got != 1 {
		t.Errorf("active GET requests = %v, want 1", got)
	}
	if got := series(t, fams, "http_server_active_requests", map[string]string{"http_request_method": "_OTHER"}).GetGauge().GetValue(); got != 0 {
		t.Errorf("active _OTHER requests = %v, want 0", got)
	}

	attempts := uint64(0)
	for outcome, want := range map[string]uint64{"http_5xx": 2, "timeout": 1} {
		got := series(t, fams, "partner_edge_pms_attempt_duration_seconds",
			map[string]string{"pms": "live", "outcome": outcome}).GetHistogram().GetSampleCount()
		if got != want {
			t.Errorf("live attempts %s = %d, want %d", outcome, got, want)
		}
		attempts += got
	}
	if attempts != 3 {
		t.Errorf("attempts for the failing call = %d, want 3", attempts)
	}
	if got := counter(t, fams, "partner_edge_pms_retries_total", map[string]string{"pms": "live", "outcome": "http_5xx"}); got != 1 {
		t.Errorf("retries after 5xx = %v, want 1", got)
	}
	if got := counter(t, fams, "partner_edge_pms_retries_total", map[string]string{"pms": "live", "outcome": "timeout"}); got != 1 {
		t.Errorf("retries after timeout = %v, want 1", got)
	}
	for pms, want := range map[string]float64{"live": 2, "sandbox": 0} {
		if got := series(t, fams, "partner_edge_pms_breaker_state", map[string]string{"pms": pms}).GetGauge().GetValue(); got != want {
			t.Errorf("breaker %s = %v, want %v", pms, got, want)
		}
	}
	for _, c := range []struct {
		pms, outcome string
		want         float64
	}{{"live", "miss", 1}, {"live", "stale", 2}, {"live", "hit", 0}, {"sandbox", "hit", 1}, {"sandbox", "coalesced", 1}} {
		if got := counter(t, fams, "partner_edge_cache_lookups_total", map[string]string{"pms": c.pms, "outcome": c.outcome}); got != c.want {
			t.Errorf("cache %s %s = %v, want %v", c.pms, c.outcome, got, c.want)
		}
	}
	if got := len(fams["partner_edge_cache_lookups_total"].GetMetric()); got != 2*len(CacheOutcomes) {
		t.Errorf("cache series = %d, want %d (a bogus outcome must not add one)", got, 2*len(CacheOutcomes))
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

func TestOutcomeOfStatus(t *testing.T) {
	for status, want := range map[int]PMSOutcome{200: PMSOK, 204: PMSOK, 304: PMSOK, 400: PMSHTTP4xx, 404: PMSHTTP4xx,
		429: PMSHTTP429, 500: PMSHTTP5xx, 503: PMSHTTP5xx} {
		if got := OutcomeOfStatus(status); got != want {
			t.Errorf("OutcomeOfStatus(%d) = %s, want %s", status, got, want)
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
	fams := scrape(t, tel.MetricsHandler())
	if n := len(fams["http_server_request_duration_seconds"].GetMetric()); n != maxReqSets+50 {
		t.Errorf("%d series recorded, want %d", n, maxReqSets+50)
	}
}

// BenchmarkRequestMetrics is the metric cost of one cached-path request: in
// flight up and down, the duration, one cache hit.
func BenchmarkRequestMetrics(b *testing.B) {
	tel, err := New(context.Background(), Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	m := tel.Metrics()
	live := m.PMS("live")
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.RequestStarted(ctx, "GET")
			live.Cache(ctx, CacheHit)
			m.RequestDone(ctx, "GET", "/v1/properties", 200, 3*time.Millisecond)
		}
	})
}

func TestParseBreakerState(t *testing.T) {
	for name, want := range map[string]BreakerState{"closed": BreakerClosed, "half-open": BreakerHalfOpen,
		"half_open": BreakerHalfOpen, "open": BreakerOpen, "weird": BreakerOpen} {
		if got := ParseBreakerState(name); got != want {
			t.Errorf("ParseBreakerState(%q) = %v, want %v", name, got, want)
		}
		if want != BreakerOpen || name == "open" {
			if back := ParseBreakerState(strings.ReplaceAll(want.String(), "_", "-")); back != want {
				t.Errorf("String/Parse round trip of %v gave %v", want, back)
			}
		}
	}
}

// The metric methods of the PMS path also tell the trace: events on the
// recording span of ctx, none when there is no span.
func TestMetricMethodsAddSpanEvents(t *testing.T) {
	tel, exp, _ := newTest(t, nil)
	m := tel.Metrics()
	live := m.PMS("live")
	ctx, span := tel.Tracer().Start(context.Background(), "pms.snapshot")
	live.Cache(ctx, CacheMiss)
	live.Retry(ctx, PMSHTTP429)
	span.End()
	live.Cache(context.Background(), CacheHit) // no span: no event, no panic

	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	var got []string
	for _, e := range spans[0].Events {
		s := e.Name
		for _, kv := range e.Attributes {
			s += " " + string(kv.Key) + "=" + kv.Value.String()
		}
		got = append(got, s)
	}
	want := []string{
		"cache.lookup partner_edge.cache.outcome=miss",
		"pms.retry partner_edge.pms.outcome=http_429",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The failed-auth throttle's counter is exposed at 0 before any refusal.
func TestAuthThrottledCounter(t *testing.T) {
	tel, _, _ := newTest(t, nil)
	if got := counter(t, scrape(t, tel.MetricsHandler()), "partner_edge_auth_throttled_total", nil); got != 0 {
		t.Errorf("before any refusal: %v, want 0", got)
	}
	tel.Metrics().AuthThrottled(context.Background())
	tel.Metrics().AuthThrottled(context.Background())
	if got := counter(t, scrape(t, tel.MetricsHandler()), "partner_edge_auth_throttled_total", nil); got != 2 {
		t.Errorf("after two refusals: %v, want 2", got)
	}
}

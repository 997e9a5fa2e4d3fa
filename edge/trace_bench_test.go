package edge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// discardExporter drops spans: the cost measured is the instrumentation's,
// not an exporter's.
type discardExporter struct{}

var _ sdktrace.SpanExporter = discardExporter{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// cachedEdge is the edge's handler over a cache of the brand (TTL a
// minute), traced by tel (nil: not traced), and its live key.
func cachedEdge(b *testing.B, tel *observability.Telemetry) (http.Handler, string) {
	now := testkit.From(testkit.Epoch)
	h := newHarness(b, harnessOptions{now: now, tel: tel, catalogs: func(live, sb upstream.Catalog) (upstream.Catalog, upstream.Catalog) {
		c := cache.New(live, cache.Config{Key: "aurora/live", TTL: time.Minute, Stale: time.Hour, Now: now})
		b.Cleanup(c.Close)
		return c, sb
	}})
	return h.srv.Config.Handler, h.keys["live"]
}

// BenchmarkCachedListTelemetry reports the per-request cost of tracing and
// metrics on the cached list path: compare the sub-benchmarks of one run
// (off, sampled out, sampled in).
func BenchmarkCachedListTelemetry(b *testing.B) {
	for _, mode := range []struct{ name, sampler string }{
		{"off", ""},
		{"sampled_out", "always_off"},
		{"sampled_in", "always_on"},
	} {
		b.Run(mode.name, func(b *testing.B) {
			var tel *observability.Telemetry
			if mode.sampler != "" {
				env := map[string]string{"OTEL_TRACES_SAMPLER": mode.sampler}
				var err error
				tel, err = observability.New(context.Background(), observability.Config{
					SpanExporter: discardExporter{}, Getenv: func(k string) string { return env[k] }})
				if err != nil {
					b.Fatal(err)
				}
				defer tel.Shutdown(context.Background())
			}
			handler, key := cachedEdge(b, tel)
			req := httptest.NewRequest(http.MethodGet, "/v1/properties?perPage=50", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("User-Agent", "bench/1.0")
			req.Header.Set("Traceparent", "00-"+parentTrace+"-"+parentSpan+"-01")
			if mode.sampler == "always_off" {
				req.Header.Set("Traceparent", "00-"+parentTrace+"-"+parentSpan+"-00")
			}
			warm := httptest.NewRecorder()
			handler.ServeHTTP(warm, req)
			if warm.Code != http.StatusOK {
				b.Fatalf("warm-up: %d %s", warm.Code, warm.Body)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w := httptest.NewRecorder()
				handler.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

// BenchmarkCachedTelemetryDeployed is the cached list and get as deployed:
// the manifest's sampler (parentbased_traceidratio at 0.01), tail
// decisions on (5xx, slow, EDGE_TRACE_KEEP_RATE), no partner traceparent.
// About one request in a hundred is sampled in and exported (here: to
// nothing), as in production.
func BenchmarkCachedTelemetryDeployed(b *testing.B) {
	env := map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01"}
	tel, err := observability.New(context.Background(), observability.Config{
		SpanExporter: discardExporter{}, Getenv: func(k string) string { return env[k] },
		TailSampling: true, KeepSlowerThan: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	handler, key := cachedEdge(b, tel)
	list := httptest.NewRequest(http.MethodGet, "/v1/properties?perPage=50", nil)
	list.Header.Set("Authorization", "Bearer "+key)
	list.Header.Set("User-Agent", "bench/1.0")
	warm := httptest.NewRecorder()
	handler.ServeHTTP(warm, list)
	if warm.Code != http.StatusOK {
		b.Fatalf("warm-up: %d %s", warm.Code, warm.Body)
	}
	m := benchPropertyID.FindStringSubmatch(warm.Body.String())
	if m == nil {
		b.Fatalf("no property id in %s", warm.Body)
	}
	get := httptest.NewRequest(http.MethodGet, "/v1/properties/"+m[1], nil)
	get.Header = list.Header.Clone()
	for _, c := range []struct {
		name string
		req  *http.Request
	}{{"list", list}, {"get", get}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				handler.ServeHTTP(w, c.req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

var benchPropertyID = regexp.MustCompile(`"id":"([0-9a-f-]{36})"`)

package pmsim_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

func TestRoute(t *testing.T) {
	for path, want := range map[string]string{
		"/internal/v2/brands/aurora/hotels":            pmsim.RouteList,
		"/internal/v2/brands/aurora/hotels/abc":        pmsim.RouteGet,
		"/internal/v2/brands/aurora/hotels/":           "",
		"/internal/v2/brands//hotels":                  "",
		"/internal/v2/brands/aurora/hotels/abc/rooms":  "",
		"/internal/v2/brands/aurora/HOTELS":            "",
		"/secret/internal/v2/brands/aurora/hotels/abc": "",
		"/": "",
		"/internal/v2/brands/aurora/hotels/%2e%2e/x/..": "",
	} {
		if got := pmsim.Route(path); got != want {
			t.Errorf("Route(%q) = %q, want %q", path, got, want)
		}
	}
}

// An instrumented Sim makes one server span per request, named by route
// template (never the raw path), continuing the caller's trace, with the
// answer's status; faults happen inside the span.
func TestInstrument(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := observability.New(context.Background(), observability.Config{
		ServiceName: "pmsim", SpanExporter: exp, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	sim := pmsim.New(pmsim.Config{Brands: 1, HotelsPerBrand: 3})
	srv := httptest.NewServer(pmsim.Instrument(sim, tel))
	defer srv.Close()
	client := srv.Client()

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	get := func(path string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Traceparent", "00-"+traceID+"-"+parentID+"-01")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tt := range []struct {
		path   string
		faults pmsim.Faults
		status int
		name   string
	}{
		{"/internal/v2/brands/aurora/hotels", pmsim.Faults{}, 200, "GET " + pmsim.RouteList},
		{"/internal/v2/brands/aurora/hotels/nope", pmsim.Faults{}, 404, "GET " + pmsim.RouteGet},
		{"/internal/v2/brands/aurora/hotels/nope", pmsim.Faults{ErrorStatus: 503}, 503, "GET " + pmsim.RouteGet},
		{"/elsewhere/aurora", pmsim.Faults{}, 404, "GET"},
	} {
		exp.Reset()
		sim.SetFaults(tt.faults)
		if got := get(tt.path); got != tt.status {
			t.Fatalf("%s: status %d, want %d", tt.path, got, tt.status)
		}
		spans := exp.GetSpans()
		// The span ends as the handler returns, which may be just after
		// the client has read a flushed answer.
		testkit.Eventually(t, tt.path+": the server span ended", func() bool { spans = exp.GetSpans(); return len(spans) > 0 })
		if len(spans) != 1 {
			t.Fatalf("%s: %d spans, want 1", tt.path, len(spans))
		}
		s := spans[0]
		if s.Name != tt.name || s.SpanKind != trace.SpanKindServer {
			t.Errorf("%s: span %q kind %v, want %q server", tt.path, s.Name, s.SpanKind, tt.name)
		}
		if s.SpanContext.TraceID().String() != traceID || s.Parent.SpanID().String() != parentID {
			t.Errorf("%s: span in trace %s under %s, want the caller's", tt.path, s.SpanContext.TraceID(), s.Parent.SpanID())
		}
		var status int64
		for _, kv := range s.Attributes {
			if kv.Key == "http.response.status_code" {
				status = kv.Value.AsInt64()
			}
		}
		if status != int64(tt.status) {
			t.Errorf("%s: span status code %d, want %d", tt.path, status, tt.status)
		}
		if v, _ := s.Resource.Set().Value("service.name"); v.AsString() != "pmsim" {
			t.Errorf("service.name %q", v.AsString())
		}
	}
}

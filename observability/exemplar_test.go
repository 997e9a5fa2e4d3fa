package observability

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestOpenMetricsExemplarsOfKeptTraces: /metrics answers OpenMetrics when
// asked, and its request-duration histogram carries the trace_id of a
// request whose trace was kept (here: a 502 at ratio 0), never of one
// dropped; the Prometheus text format stays the default.
func TestOpenMetricsExemplarsOfKeptTraces(t *testing.T) {
	tel, _ := newTail(t, map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}, time.Second)
	serve := func(status int) string {
		r := httptest.NewRequest("GET", "/v1/properties", nil)
		ctx, span := tel.StartServerSpan(r)
		defer span.End()
		tel.Metrics().RequestStarted(ctx, "GET")
		sctx, _, end := tel.Decide(ctx, r, time.Now(), status, 3*time.Millisecond)
		tel.Metrics().RequestDone(sctx, "GET", "/v1/properties", status, 3*time.Millisecond)
		end(time.Now())
		return span.SpanContext().TraceID().String()
	}
	dropped := serve(200)
	kept := serve(502)

	get := func(accept string) (string, string) {
		r := httptest.NewRequest("GET", "/metrics", nil)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		w := httptest.NewRecorder()
		tel.MetricsHandler().ServeHTTP(w, r)
		b, _ := io.ReadAll(w.Result().Body)
		return w.Result().Header.Get("Content-Type"), string(b)
	}
	ct, body := get("application/openmetrics-text; version=1.0.0,text/plain;q=0.5")
	if !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("Content-Type %q, want OpenMetrics", ct)
	}
	if !strings.Contains(body, `trace_id="`+kept+`"`) {
		t.Errorf("no exemplar with the kept request's trace id %s:\n%s", kept, grep(body, "http_server_request_duration"))
	}
	if strings.Contains(body, dropped) {
		t.Errorf("an exemplar names the dropped request's trace %s", dropped)
	}
	if ct, _ := get(""); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("without Accept: %q, want the text format", ct)
	}
}

func grep(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

package edge_test

import (
	"context"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestAccessLineSaysWhetherTheTraceWasKept (docs/contract.md section 20):
// with a sampler that keeps nothing, a 200's trace is dropped and its line
// says trace_sampled false; a 502's whole trace is exported (the server
// span with the span id its line names, the PMS call, the attempts, the
// simulator's spans) and its line says true; /v1/health is not traced.
func TestAccessLineSaysWhetherTheTraceWasKept(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	env := map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}
	tel, err := observability.New(context.Background(), observability.Config{SpanExporter: exp,
		Getenv: func(k string) string { return env[k] }, TailSampling: true, KeepSlowerThan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	_, simTel, _ := newTelemetry(t)
	h := newHarness(t, harnessOptions{tel: tel, simTel: simTel})
	id := activeIDs(t, h.live, testBrand)[0]
	exp.Reset()

	// The partner's traceparent (not sampled) names the trace, for the
	// spans exported; the harness's log has no trace ids of its own.
	req := request{path: "/v1/properties/" + id, key: "live", headers: map[string][]string{
		"Traceparent": {"00-" + parentTrace + "-" + parentSpan + "-00"}}}
	ok := h.do(req)
	wantOK(t, req, ok)
	h.live.SetFaults(pmsim.Faults{ErrorStatus: 500})
	const badTrace = "0af7651916cd43dd8448eb211c80319c"
	bad := h.do(request{path: req.path, key: "live", headers: map[string][]string{
		"Traceparent": {"00-" + badTrace + "-" + parentSpan + "-00"}}})
	h.live.SetFaults(pmsim.Faults{})
	if bad.status != 502 {
		t.Fatalf("failing get: %d", bad.status)
	}
	health := h.do(request{path: "/v1/health"})

	okLine := accessLine(t, h.logs, ok.header.Get("Svc-Request-Id"))
	badLine := accessLine(t, h.logs, bad.header.Get("Svc-Request-Id"))
	healthLine := accessLine(t, h.logs, health.header.Get("Svc-Request-Id"))
	if okLine["trace_sampled"] != false || badLine["trace_sampled"] != true {
		t.Errorf("trace_sampled: 200 %v, 502 %v; want false, true", okLine["trace_sampled"], badLine["trace_sampled"])
	}
	if healthLine["trace_sampled"] != false || health.header.Get("Traceparent") != "" || healthLine["trace_id"] != nil {
		t.Errorf("/v1/health's line %v: want no trace", healthLine)
	}
	// Each line names its trace and server span itself, whatever the log
	// handler (this one adds no trace ids): trace_flags as the span's when
	// the line was written, sampled once the tail decision kept it.
	for _, c := range []struct {
		line         map[string]any
		trace, flags string
		res          response
	}{{okLine, parentTrace, "00", ok}, {badLine, badTrace, "01", bad}} {
		if c.line["trace_id"] != c.trace || c.line["span_id"] != traceparentSpan(c.res.header.Get("Traceparent")) || c.line["trace_flags"] != c.flags {
			t.Errorf("line %v: want trace_id %s, span_id of %s, trace_flags %s", c.line, c.trace, c.res.header.Get("Traceparent"), c.flags)
		}
	}
	var server, calls, attempts int
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID().String() != badTrace {
			t.Errorf("span %s of trace %s exported: only the 502's trace is kept", s.Name, s.SpanContext.TraceID())
			continue
		}
		switch {
		case s.Name == "GET /v1/properties/{propertyId}" && s.SpanKind == trace.SpanKindServer && s.Parent.SpanID().String() == parentSpan &&
			s.SpanContext.SpanID().String() == traceparentSpan(bad.header.Get("Traceparent")):
			server++
		case s.Name == "pms.get_hotel":
			calls++
		case s.SpanKind == trace.SpanKindClient:
			attempts++
		}
	}
	if server != 1 || calls != 1 || attempts != 3 {
		t.Errorf("the 502's trace: %d server spans with the logged id, %d calls, %d attempts: %v", server, calls, attempts, names(exp.GetSpans()))
	}
}

// traceparentSpan is the span id of a traceparent value.
func traceparentSpan(tp string) string {
	if len(tp) != 55 {
		return ""
	}
	return tp[36:52]
}

package edge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// newTelemetry returns telemetry for the edge and for the simulators, both
// exporting into one in-memory exporter, as a collector would see them.
func newTelemetry(t testing.TB) (edgeTel, simTel *observability.Telemetry, exp *tracetest.InMemoryExporter) {
	t.Helper()
	exp = tracetest.NewInMemoryExporter()
	env := func(string) string { return "" }
	var err error
	if edgeTel, err = observability.New(context.Background(), observability.Config{SpanExporter: exp, Getenv: env}); err != nil {
		t.Fatal(err)
	}
	if simTel, err = observability.New(context.Background(), observability.Config{ServiceName: "pmsim", SpanExporter: exp, Getenv: env}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = edgeTel.Shutdown(context.Background())
		_ = simTel.Shutdown(context.Background())
	})
	return edgeTel, simTel, exp
}

const (
	parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpan  = "00f067aa0ba902b7"
)

// docs/observability.md: one trace from the partner's parent to the PMS.
func TestOneTracePartnerToPMS(t *testing.T) {
	tel, simTel, exp := newTelemetry(t)
	h := newHarness(t, harnessOptions{tel: tel, simTel: simTel})
	id := activeIDs(t, h.live, testBrand)[0]
	exp.Reset()

	req := request{path: "/v1/properties/" + id, key: "live", headers: map[string][]string{
		"Traceparent": {"00-" + parentTrace + "-" + parentSpan + "-01"},
		"Tracestate":  {"vendor=abc"},
	}}
	res := h.do(req)
	wantOK(t, req, res)
	spans := exp.GetSpans()

	var server *tracetest.SpanStub
	for i := range spans {
		if spans[i].SpanKind == trace.SpanKindServer && spans[i].Name == "GET /v1/properties/{propertyId}" {
			server = &spans[i]
		}
	}
	if server == nil {
		t.Fatalf("no edge server span named by route among %d spans: %v", len(spans), names(spans))
	}
	if server.SpanContext.TraceID().String() != parentTrace || server.Parent.SpanID().String() != parentSpan {
		t.Errorf("edge span %s is not the child of the sent parent", server.SpanContext.SpanID())
	}
	if ts := server.SpanContext.TraceState().String(); ts != "vendor=abc" {
		t.Errorf("tracestate %q not kept", ts)
	}
	attrs := map[string]string{}
	for _, kv := range server.Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if attrs["http.route"] != "/v1/properties/{propertyId}" || attrs["partner_edge.request_id"] != res.header.Get("Svc-Request-Id") ||
		attrs["partner_edge.key_id"] != "key_live" {
		t.Errorf("server span attributes %v", attrs)
	}
	for _, kv := range server.Attributes {
		if strings.Contains(kv.Value.String(), h.keys["live"]) {
			t.Errorf("the key appears in span attribute %s", kv.Key)
		}
	}
	want := "00-" + parentTrace + "-" + server.SpanContext.SpanID().String() + "-01"
	if got := res.header.Get("Traceparent"); got != want {
		t.Errorf("Traceparent %q, want %q", got, want)
	}

	// Every span is in the one trace; the simulator's server span is the
	// child of the client attempt span that reached it, itself a
	// descendant of the edge's span.
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		if s.SpanContext.TraceID().String() != parentTrace {
			t.Errorf("span %q is in another trace", s.Name)
		}
		byID[s.SpanContext.SpanID()] = s
	}
	descends := func(s tracetest.SpanStub, ancestor trace.SpanID) bool {
		for p := s.Parent.SpanID(); p.IsValid(); p = byID[p].Parent.SpanID() {
			if p == ancestor {
				return true
			}
			if _, ok := byID[p]; !ok {
				return false
			}
		}
		return false
	}
	var sims int
	for _, s := range spans {
		if s.SpanKind != trace.SpanKindServer || s.Resource.String() == server.Resource.String() {
			continue
		}
		sims++
		attempt, ok := byID[s.Parent.SpanID()]
		if !ok || attempt.SpanKind != trace.SpanKindClient {
			t.Errorf("simulator span %q is not the child of a client attempt span", s.Name)
			continue
		}
		if !descends(attempt, server.SpanContext.SpanID()) {
			t.Errorf("attempt span %q does not descend from the edge span", attempt.Name)
		}
	}
	if sims == 0 {
		t.Errorf("no simulator server span: %v", names(spans))
	}
	// The attempts hang under one span for the logical PMS call.
	var call *tracetest.SpanStub
	for i := range spans {
		if spans[i].Name == "pms.get_hotel" {
			call = &spans[i]
		}
	}
	if call == nil || call.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Fatalf("no pms.get_hotel span under the edge span: %v", names(spans))
	}
	for _, s := range spans {
		if s.SpanKind == trace.SpanKindClient && s.Parent.SpanID() != call.SpanContext.SpanID() {
			t.Errorf("attempt span %q is not a child of the call span", s.Name)
		}
	}
}

// docs/observability.md: the W3C trace-context vectors at the edge: valid
// ones continue, invalid ones start a fresh trace, none yields a 4xx.
func TestTraceparentVectors(t *testing.T) {
	tel, simTel, exp := newTelemetry(t)
	h := newHarness(t, harnessOptions{tel: tel, simTel: simTel})
	for _, tc := range []struct {
		name, value string
		continues   bool
	}{
		{"valid sampled", "00-" + parentTrace + "-" + parentSpan + "-01", true},
		{"valid not sampled", "00-" + parentTrace + "-" + parentSpan + "-00", true},
		{"future version with extra field", "cc-" + parentTrace + "-" + parentSpan + "-01-what-the-future-holds", true},
		{"version ff", "ff-" + parentTrace + "-" + parentSpan + "-01", false},
		{"upper-case hex", "00-" + strings.ToUpper(parentTrace) + "-" + parentSpan + "-01", false},
		{"all-zero trace id", "00-00000000000000000000000000000000-" + parentSpan + "-01", false},
		{"all-zero span id", "00-" + parentTrace + "-0000000000000000-01", false},
		{"short trace id", "00-" + parentTrace[1:] + "-" + parentSpan + "-01", false},
		{"long span id", "00-" + parentTrace + "-" + parentSpan + "0-01", false},
		{"extra field on version 00", "00-" + parentTrace + "-" + parentSpan + "-01-extra", false},
		{"garbage", "not a traceparent", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exp.Reset()
			req := request{path: "/v1/", key: "live", headers: map[string][]string{"Traceparent": {tc.value}}}
			res := h.do(req)
			wantOK(t, req, res)
			tp := res.header.Get("Traceparent")
			parts := strings.Split(tp, "-")
			if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 {
				t.Fatalf("Traceparent %q", tp)
			}
			if continued := parts[1] == parentTrace; continued != tc.continues {
				t.Errorf("trace id %s: continued=%v, want %v", parts[1], continued, tc.continues)
			}
			if parts[2] == parentSpan {
				t.Errorf("Traceparent names the partner's span, not the edge's")
			}
		})
	}
	// No traceparent sent: none returned.
	req := request{path: "/v1/", key: "live"}
	if tp := h.do(req).header.Get("Traceparent"); tp != "" {
		t.Errorf("Traceparent %q without one sent", tp)
	}
}

func names(spans tracetest.SpanStubs) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name)
	}
	return n
}

// The server span learns the answer from the request state's one
// ResponseWriter wrapper (SpanMiddleware, SetResponse): status code, body
// size, and an error status for a 5xx, for answers and problems alike.
func TestServerSpanRecordsTheAnswer(t *testing.T) {
	tel, simTel, exp := newTelemetry(t)
	h := newHarness(t, harnessOptions{tel: tel, simTel: simTel, catalogs: func(live, _ upstream.Catalog) (upstream.Catalog, upstream.Catalog) {
		return live, panicking{} // test keys meet a fault: 500
	}})
	id := activeIDs(t, h.live, testBrand)[0]
	for _, c := range []struct {
		req    request
		status int64
		failed bool
	}{
		{request{path: "/v1/properties/" + id, key: "live"}, 200, false},
		{request{path: "/v1/properties/not-a-uuid", key: "live"}, 400, false},
		{request{path: "/v1/nothing-here"}, 404, false},
		{request{path: "/v1/properties", key: "test"}, 500, true},
	} {
		exp.Reset()
		res := h.do(c.req)
		var server *tracetest.SpanStub
		for i, s := range exp.GetSpans() {
			if s.SpanKind == trace.SpanKindServer && strings.HasPrefix(s.Name, "GET") {
				server = &exp.GetSpans()[i]
			}
		}
		if server == nil {
			t.Fatalf("%s: no server span", c.req.path)
		}
		var status, size int64
		for _, kv := range server.Attributes {
			switch kv.Key {
			case "http.response.status_code":
				status = kv.Value.AsInt64()
			case "http.response.body.size":
				size = kv.Value.AsInt64()
			}
		}
		if status != c.status || size != int64(len(res.body)) || size == 0 {
			t.Errorf("%s: span status %d, body size %d; answer %d with %d bytes", c.req.path, status, size, res.status, len(res.body))
		}
		if (server.Status.Code == codes.Error) != c.failed {
			t.Errorf("%s: span status %v", c.req.path, server.Status)
		}
	}
}

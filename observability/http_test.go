package observability

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

type resendKey struct{}

// resendFrom plays upstream/pms.ResendCount: the attempts before this one.
func resendFrom(ctx context.Context) int {
	n, _ := ctx.Value(resendKey{}).(int)
	return n
}

func attr(s tracetest.SpanStub, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func byName(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestOneTraceFromPartnerToPMS runs an edge-shaped server and a PMS-shaped
// server on loopback, both instrumented, with one failed and one good attempt,
// and checks the span tree and the headers on the wire.
func TestOneTraceFromPartnerToPMS(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	edgeTel, err := New(context.Background(), Config{SpanExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	defer edgeTel.Shutdown(context.Background())
	pmsTel, err := New(context.Background(), Config{ServiceName: "pmsim", SpanExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	defer pmsTel.Shutdown(context.Background())

	var mu sync.Mutex
	var pmsSaw []string // traceparent per PMS request
	var pmsBaggage []string
	pms := httptest.NewServer(pmsTel.Middleware()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetRoute(r.Context(), r.Method, "/hotels/{id}")
		mu.Lock()
		pmsSaw = append(pmsSaw, r.Header.Get("Traceparent"))
		pmsBaggage = append(pmsBaggage, r.Header.Get("Baggage"))
		n := len(pmsSaw)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, `{}`)
	})))
	defer pms.Close()

	client := &http.Client{Transport: edgeTel.Transport(nil, resendFrom)}
	edge := httptest.NewServer(edgeTel.Middleware()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		SetRoute(ctx, r.Method, "/v1/properties/{propertyId}")
		w.Header().Set("Traceparent", Traceparent(ctx))
		ctx, call := edgeTel.Tracer().Start(ctx, "pms.property")
		defer call.End()
		for n := 1; n <= 2; n++ {
			req, _ := http.NewRequestWithContext(context.WithValue(ctx, resendKey{}, n-1), "GET", pms.URL+"/hotels/1", nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Errorf("attempt %d: %v", n, err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		w.WriteHeader(http.StatusOK)
	})))
	defer edge.Close()

	req, _ := http.NewRequest("GET", edge.URL+"/v1/properties/abc", nil)
	req.Header.Set("Traceparent", "00-"+vecTrace+"-"+vecSpan+"-01")
	req.Header.Set("Baggage", "partner=untrusted")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	for _, b := range pmsBaggage {
		if b != "" {
			t.Errorf("partner baggage reached the PMS: %q", b)
		}
	}
	spans := exp.GetSpans()
	for _, s := range spans {
		if s.SpanContext.TraceID().String() != vecTrace {
			t.Errorf("span %q in trace %s, want %s", s.Name, s.SpanContext.TraceID(), vecTrace)
		}
	}
	servers := byName(spans, "GET /v1/properties/{propertyId}")
	calls := byName(spans, "pms.property")
	attempts := byName(spans, "GET")
	pmsServers := byName(spans, "GET /hotels/{id}")
	if len(servers) != 1 || len(calls) != 1 || len(attempts) != 2 || len(pmsServers) != 2 {
		t.Fatalf("spans %d/%d/%d/%d, want 1 edge server, 1 call, 2 attempts, 2 PMS servers: %v",
			len(servers), len(calls), len(attempts), len(pmsServers), spans)
	}
	server, call := servers[0], calls[0]
	if server.Parent.SpanID().String() != vecSpan || server.SpanKind != trace.SpanKindServer {
		t.Errorf("edge server span parent %s kind %v, want %s server", server.Parent.SpanID(), server.SpanKind, vecSpan)
	}
	if v, _ := attr(server, "http.route"); v.AsString() != "/v1/properties/{propertyId}" {
		t.Errorf("http.route = %q", v.AsString())
	}
	if want := "00-" + vecTrace + "-" + server.SpanContext.SpanID().String() + "-01"; resp.Header.Get("Traceparent") != want {
		t.Errorf("response Traceparent %q, want %q", resp.Header.Get("Traceparent"), want)
	}
	if call.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Error("logical PMS call span is not the server span's child")
	}
	for i, a := range attempts {
		if a.Parent.SpanID() != call.SpanContext.SpanID() || a.SpanKind != trace.SpanKindClient {
			t.Errorf("attempt %d: parent %s kind %v, want child client of the call span", i, a.Parent.SpanID(), a.SpanKind)
		}
		n, _ := attr(a, AttrAttempt)
		resend, hasResend := attr(a, "http.request.resend_count")
		status, _ := attr(a, "http.response.status_code")
		switch n.AsInt64() {
		case 1:
			if hasResend || status.AsInt64() != 503 {
				t.Errorf("first attempt: resend_count present %v, status %d", hasResend, status.AsInt64())
			}
		case 2:
			if resend.AsInt64() != 1 || status.AsInt64() != 200 {
				t.Errorf("second attempt: resend_count %d, status %d", resend.AsInt64(), status.AsInt64())
			}
		default:
			t.Errorf("attempt span without attempt number: %v", a.Attributes)
		}
		// The PMS saw this attempt's span as its parent, and its server span
		// is the attempt's child.
		found := false
		for j, p := range pmsServers {
			if p.Parent.SpanID() == a.SpanContext.SpanID() {
				found = true
				if want := "00-" + vecTrace + "-" + a.SpanContext.SpanID().String() + "-01"; !strings.EqualFold(pmsSaw[0], want) && !strings.EqualFold(pmsSaw[1], want) {
					t.Errorf("PMS never received traceparent %s (got %q)", want, pmsSaw)
				}
				if v := resourceAttr(p, "service.name"); v != "pmsim" {
					t.Errorf("PMS server span %d from service %q", j, v)
				}
			}
		}
		if !found {
			t.Errorf("attempt %d has no PMS server span child", i)
		}
	}
}

func TestSetRoute(t *testing.T) {
	tel, exp, _ := newTest(t, nil)
	for _, tt := range []struct{ method, route, want string }{
		{"GET", "/v1/", "GET /v1/"},
		{"BREW", "/v1/", "HTTP /v1/"},
		{"GET", "", "GET"}, // no route matched: the method only
	} {
		exp.Reset()
		h := tel.Middleware()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			SetRoute(r.Context(), tt.method, tt.route)
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/", nil))
		if s := exp.GetSpans(); len(s) != 1 || s[0].Name != tt.want {
			t.Errorf("SetRoute(%s, %q): spans %v, want one named %q", tt.method, tt.route, s, tt.want)
		}
	}
	SetRoute(context.Background(), "GET", "/v1/") // no span: no panic
}

func TestAdminHandler(t *testing.T) {
	tel, _, _ := newTest(t, nil)
	tel.Metrics().KeyReload(context.Background(), true)
	admin := AdminHandler(tel.MetricsHandler(), []string{"edge", "--brand", "aurora"})
	for _, tt := range []struct {
		path string
		code int
		body string
	}{
		{"/metrics", 200, `partner_edge_keys_reloads_total{`},
		{"/debug/pprof/", 200, "goroutine"},
		{"/debug/pprof/goroutine?debug=1", 200, "goroutine profile"},
		{"/debug/pprof/cmdline", 200, "edge\x00--brand\x00aurora"},
		{"/v1/properties", 404, ""},
		{"/", 404, ""},
	} {
		rec := httptest.NewRecorder()
		admin.ServeHTTP(rec, httptest.NewRequest("GET", tt.path, nil))
		if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.body) {
			t.Errorf("GET %s: %d, want %d with %q", tt.path, rec.Code, tt.code, tt.body)
		}
	}
	rec := httptest.NewRecorder()
	AdminHandler(nil, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 404 {
		t.Errorf("AdminHandler(nil, nil) serves /metrics: %d", rec.Code)
	}
}

// BenchmarkServerSpan is the tracing cost per request of Middleware with
// SetRoute, sampled in (spans recorded, no exporter) and sampled out.
func BenchmarkServerSpan(b *testing.B) {
	for _, sampler := range []string{"always_on", "always_off"} {
		b.Run(sampler, func(b *testing.B) {
			tel, err := New(context.Background(), Config{Getenv: env(map[string]string{"OTEL_TRACES_SAMPLER": sampler})})
			if err != nil {
				b.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			h := tel.Middleware()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				SetRoute(r.Context(), r.Method, "/v1/properties")
				w.WriteHeader(200)
			}))
			req := httptest.NewRequest("GET", "/v1/properties", nil)
			req.Header.Set("Traceparent", "00-"+vecTrace+"-"+vecSpan+"-01")
			w := httptest.NewRecorder()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				h.ServeHTTP(w, req)
			}
		})
	}
}

// With OTEL_PROPAGATORS=tracecontext,baggage the service's own baggage
// travels to the PMS, with the attempt's traceparent.
func TestTransportInjectsOwnBaggage(t *testing.T) {
	tel, _, _ := newTest(t, map[string]string{"OTEL_PROPAGATORS": "tracecontext,baggage"})
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() }))
	defer srv.Close()
	m, _ := baggage.NewMember("deployment", "eu1")
	bag, _ := baggage.New(m)
	ctx := baggage.ContextWithBaggage(context.Background(), bag)
	ctx, span := tel.Tracer().Start(ctx, "call")
	defer span.End()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := (&http.Client{Transport: tel.Transport(nil, nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := <-got
	if h.Get("Baggage") != "deployment=eu1" {
		t.Errorf("Baggage = %q, want deployment=eu1", h.Get("Baggage"))
	}
	if tp := h.Get("Traceparent"); !strings.HasPrefix(tp, "00-"+span.SpanContext().TraceID().String()+"-") {
		t.Errorf("Traceparent = %q, want one in trace %s", tp, span.SpanContext().TraceID())
	}
}

// OTEL_PROPAGATORS says in which formats the trace context goes to the
// PMS: unset, W3C traceparent alone (no baggage, even the context's own);
// b3 the B3 single header alone; none nothing.
func TestTransportPropagatorsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want, not   []string
	}{
		{"default", "", []string{"Traceparent"}, []string{"Baggage", "B3"}},
		{"baggage when asked", "tracecontext,baggage", []string{"Traceparent", "Baggage"}, []string{"B3"}},
		{"b3", " B3 ", []string{"B3"}, []string{"Traceparent", "Baggage"}},
		{"none", "none", nil, []string{"Traceparent", "Baggage", "B3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel, _, _ := newTest(t, map[string]string{"OTEL_PROPAGATORS": tc.value})
			got := make(chan http.Header, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() }))
			defer srv.Close()
			m, _ := baggage.NewMember("deployment", "eu1")
			bag, _ := baggage.New(m)
			ctx, span := tel.Tracer().Start(baggage.ContextWithBaggage(context.Background(), bag), "call")
			defer span.End()
			req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
			resp, err := (&http.Client{Transport: tel.Transport(nil, nil)}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			h := <-got
			for _, k := range tc.want {
				if h.Get(k) == "" {
					t.Errorf("OTEL_PROPAGATORS=%q: no %s header sent", tc.value, k)
				}
			}
			for _, k := range tc.not {
				if v := h.Get(k); v != "" {
					t.Errorf("OTEL_PROPAGATORS=%q: %s: %s sent", tc.value, k, v)
				}
			}
		})
	}
}

// A trace sampled out records no attempt span, yet the PMS still gets the
// traceparent (the caller's trace, not sampled), tracestate and baggage,
// and the request given to the transport is left as it was.
func TestTransportUnsampledStillPropagates(t *testing.T) {
	tel, exp, _ := newTest(t, map[string]string{"OTEL_TRACES_SAMPLER": "always_off", "OTEL_PROPAGATORS": "tracecontext,baggage"})
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() }))
	defer srv.Close()
	m, _ := baggage.NewMember("deployment", "eu1")
	bag, _ := baggage.New(m)
	ctx := baggage.ContextWithBaggage(context.Background(), bag)
	ctx, span := tel.Tracer().Start(ctx, "call")
	defer span.End()
	if span.IsRecording() || !span.SpanContext().IsValid() {
		t.Fatalf("always_off: span recording %v, valid %v; want a valid span that does not record", span.IsRecording(), span.SpanContext().IsValid())
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := (&http.Client{Transport: tel.Transport(nil, nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := <-got
	sc := span.SpanContext()
	if want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-00"; h.Get("Traceparent") != want {
		t.Errorf("Traceparent = %q, want %q", h.Get("Traceparent"), want)
	}
	if h.Get("Baggage") != "deployment=eu1" {
		t.Errorf("Baggage = %q, want deployment=eu1", h.Get("Baggage"))
	}
	if len(req.Header) != 0 {
		t.Errorf("the caller's request was changed: %v", req.Header)
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Errorf("%d spans exported, want none", n)
	}
}

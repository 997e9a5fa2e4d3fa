package observability

import (
	"cmp"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// env is a Getenv backed by a map.
func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// newTest builds a Telemetry exporting spans to a fresh in-memory exporter.
func newTest(t *testing.T, vars map[string]string) (*Telemetry, *tracetest.InMemoryExporter, *sdkmetric.ManualReader) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	tel, err := New(context.Background(), Config{Getenv: env(vars), SpanExporter: exp, MetricReader: reader})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel, exp, reader
}

func resourceAttr(s tracetest.SpanStub, k attribute.Key) string {
	for _, kv := range s.Resource.Attributes() {
		if kv.Key == k {
			return kv.Value.String()
		}
	}
	return ""
}

func TestProviderExportsSpansWithResource(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		vars     map[string]string
		wantName string
		wantVer  string
	}{
		{"defaults", Config{}, nil, "partner-edge", ""},
		{"env name", Config{}, map[string]string{"OTEL_SERVICE_NAME": "edge-eu"}, "edge-eu", ""},
		{"config wins", Config{ServiceName: "cfg", Version: "v1.2.3"}, map[string]string{"OTEL_SERVICE_NAME": "edge-eu"}, "cfg", "v1.2.3"},
		// The OpenTelemetry specification's order: OTEL_SERVICE_NAME over
		// OTEL_RESOURCE_ATTRIBUTES over the default; the resource
		// attributes over the build's version.
		{"resource attributes name and version", Config{Version: "v1.2.3"},
			map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=edge-attrs,service.version=2026.7"}, "edge-attrs", "2026.7"},
		{"OTEL_SERVICE_NAME over resource attributes", Config{Version: "v1.2.3"},
			map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=edge-attrs", "OTEL_SERVICE_NAME": "edge-eu"}, "edge-eu", "v1.2.3"},
		{"empty OTEL_SERVICE_NAME is unset", Config{},
			map[string]string{"OTEL_RESOURCE_ATTRIBUTES": "service.name=edge-attrs", "OTEL_SERVICE_NAME": " "}, "edge-attrs", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			cfg := tt.cfg
			cfg.Getenv, cfg.SpanExporter = env(tt.vars), exp
			tel, err := New(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			if got := tel.TracesExporter(); got != "custom" {
				t.Errorf("TracesExporter = %q, want custom", got)
			}
			_, span := tel.Tracer().Start(context.Background(), "work")
			span.End()
			spans := exp.GetSpans()
			if len(spans) != 1 || spans[0].Name != "work" {
				t.Fatalf("spans = %v, want one named work", spans)
			}
			if got := resourceAttr(spans[0], "service.name"); got != tt.wantName {
				t.Errorf("service.name = %q, want %q", got, tt.wantName)
			}
			wantVer := tt.wantVer
			if wantVer == "" {
				wantVer = cmp.Or(ModuleVersion(), "unknown")
			}
			if got := resourceAttr(spans[0], "service.version"); got != wantVer || got == "" {
				t.Errorf("service.version = %q, want %q", got, wantVer)
			}
		})
	}
}

func TestResourceAttributesFromEnv(t *testing.T) {
	tel, exp, _ := newTest(t, map[string]string{
		"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=prod,team=edge%20sre,service.name=edge%2Deu",
	})
	_, span := tel.Tracer().Start(context.Background(), "x")
	span.End()
	s := exp.GetSpans()[0]
	for k, want := range map[attribute.Key]string{"deployment.environment.name": "prod", "team": "edge sre", "service.name": "edge-eu"} {
		if got := resourceAttr(s, k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func TestBadSettingsNameTheVariable(t *testing.T) {
	for _, tt := range []struct{ k, v string }{
		{"OTEL_TRACES_SAMPLER", "sometimes"},
		{"OTEL_TRACES_SAMPLER_ARG", "1.5"},
		{"OTEL_TRACES_SAMPLER_ARG", "half"},
		{"OTEL_RESOURCE_ATTRIBUTES", "novalue"},
		{"OTEL_PROPAGATORS", "tracecontext,w3c"},
		{"OTEL_BSP_MAX_QUEUE_SIZE", "many"},
	} {
		vars := map[string]string{tt.k: tt.v}
		if tt.k == "OTEL_TRACES_SAMPLER_ARG" {
			vars["OTEL_TRACES_SAMPLER"] = "traceidratio"
		}
		if tt.k == "OTEL_BSP_MAX_QUEUE_SIZE" { // read where spans are batched
			vars["OTEL_TRACES_EXPORTER"] = "console"
		}
		_, err := New(context.Background(), Config{Getenv: env(vars)})
		if err == nil || !strings.Contains(err.Error(), tt.k) {
			t.Errorf("%s=%q: err = %v, want one naming %s", tt.k, tt.v, err, tt.k)
		}
	}
}

func TestNothingConfiguredExportsNothing(t *testing.T) {
	tel, err := New(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	if got := tel.TracesExporter(); got != "none" {
		t.Errorf("TracesExporter = %q, want none", got)
	}
	// Spans still exist (trace ids for logs and Traceparent), just unexported.
	ctx, span := tel.Tracer().Start(context.Background(), "x")
	defer span.End()
	if !span.SpanContext().IsValid() || Traceparent(ctx) == "" {
		t.Error("no valid span context without an exporter")
	}
}

func TestSDKDisabled(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), Config{Getenv: env(map[string]string{"OTEL_SDK_DISABLED": "TRUE"}), SpanExporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	if got := tel.TracesExporter(); got != "disabled" {
		t.Errorf("TracesExporter = %q, want disabled", got)
	}
	_, span := tel.Tracer().Start(context.Background(), "x")
	span.End()
	if span.IsRecording() || len(exp.GetSpans()) != 0 {
		t.Error("spans recorded with OTEL_SDK_DISABLED=true")
	}
	tel.Metrics().KeyReload(context.Background(), true)
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || strings.Contains(rec.Body.String(), "partner_edge") {
		t.Errorf("metrics with SDK disabled: %d %q", rec.Code, rec.Body.String())
	}
}

func TestSamplerFromEnv(t *testing.T) {
	sampledParent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, TraceFlags: trace.FlagsSampled, Remote: true})
	unsampledParent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{2}, SpanID: trace.SpanID{2}, Remote: true})
	tests := []struct {
		sampler, arg                string
		root, underSampled, underNo bool
	}{
		{"", "", true, true, false},
		{"parentbased_always_on", "", true, true, false},
		{"parentbased_always_off", "", false, true, false},
		{"always_on", "", true, true, true},
		{"always_off", "", false, false, false},
		{"traceidratio", "0", false, false, false},
		{"parentbased_traceidratio", "0", false, true, false},
		{"parentbased_traceidratio", "1", true, true, false},
	}
	for _, tt := range tests {
		tel, _, _ := newTest(t, map[string]string{"OTEL_TRACES_SAMPLER": tt.sampler, "OTEL_TRACES_SAMPLER_ARG": tt.arg})
		start := func(parent trace.SpanContext) bool {
			ctx := context.Background()
			if parent.IsValid() {
				ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
			}
			_, span := tel.Tracer().Start(ctx, "x")
			defer span.End()
			return span.SpanContext().IsSampled()
		}
		if got := start(trace.SpanContext{}); got != tt.root {
			t.Errorf("%s(%s): root sampled = %v, want %v", tt.sampler, tt.arg, got, tt.root)
		}
		if got := start(sampledParent); got != tt.underSampled {
			t.Errorf("%s(%s): under sampled parent = %v, want %v", tt.sampler, tt.arg, got, tt.underSampled)
		}
		if got := start(unsampledParent); got != tt.underNo {
			t.Errorf("%s(%s): under unsampled parent = %v, want %v", tt.sampler, tt.arg, got, tt.underNo)
		}
	}
}

func TestTraceparentFormat(t *testing.T) {
	if got := Traceparent(context.Background()); got != "" {
		t.Errorf("Traceparent without span = %q, want empty", got)
	}
	tid, _ := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
	sid, _ := trace.SpanIDFromHex("b7ad6b7169203331")
	for flags, want := range map[trace.TraceFlags]string{
		trace.FlagsSampled: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		0:                  "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00",
	} {
		ctx := trace.ContextWithSpanContext(context.Background(),
			trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags}))
		if got := Traceparent(ctx); got != want {
			t.Errorf("Traceparent = %q, want %q", got, want)
		}
	}
}

// Propagator continuity, checked through the real server middleware.
const (
	vecTrace = "0af7651916cd43dd8448eb211c80319c"
	vecSpan  = "b7ad6b7169203331"
)

func TestTraceparentVectors(t *testing.T) {
	tests := []struct {
		name, header string
		continued    bool
		sampled      bool
	}{
		{"valid sampled", "00-" + vecTrace + "-" + vecSpan + "-01", true, true},
		{"valid not sampled", "00-" + vecTrace + "-" + vecSpan + "-00", true, false},
		{"future version with extra field", "cc-" + vecTrace + "-" + vecSpan + "-01-what-the-future", true, true},
		{"version ff", "ff-" + vecTrace + "-" + vecSpan + "-01", false, true},
		{"upper-case trace id", "00-" + strings.ToUpper(vecTrace) + "-" + vecSpan + "-01", false, true},
		{"upper-case span id", "00-" + vecTrace + "-" + strings.ToUpper(vecSpan) + "-01", false, true},
		{"upper-case version", "0A-" + vecTrace + "-" + vecSpan + "-01", false, true},
		{"all-zero trace id", "00-00000000000000000000000000000000-" + vecSpan + "-01", false, true},
		{"all-zero span id", "00-" + vecTrace + "-0000000000000000-01", false, true},
		{"short trace id", "00-" + vecTrace[1:] + "-" + vecSpan + "-01", false, true},
		{"long trace id", "00-" + vecTrace + "0-" + vecSpan + "-01", false, true},
		{"short span id", "00-" + vecTrace + "-" + vecSpan[1:] + "-01", false, true},
		{"long span id", "00-" + vecTrace + "-" + vecSpan + "0-01", false, true},
		{"short version", "0-" + vecTrace + "-" + vecSpan + "-01", false, true},
		{"long flags", "00-" + vecTrace + "-" + vecSpan + "-001", false, true},
		{"extra field on version 00", "00-" + vecTrace + "-" + vecSpan + "-01-extra", false, true},
		{"non-hex in trace id", "00-" + vecTrace[:31] + "g-" + vecSpan + "-01", false, true},
		{"non-hex flags", "00-" + vecTrace + "-" + vecSpan + "-0x", false, true},
		{"missing flags", "00-" + vecTrace + "-" + vecSpan, false, true},
		{"wrong separators", "00_" + vecTrace + "_" + vecSpan + "_01", false, true},
		{"garbage", "hello, world", false, true},
		{"empty", "", false, true},
	}
	tel, exp, _ := newTest(t, nil)
	var inner trace.SpanContext
	h := tel.Middleware()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inner = trace.SpanContextFromContext(r.Context())
		w.Header().Set("Traceparent", Traceparent(r.Context()))
		w.WriteHeader(http.StatusOK)
	}))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp.Reset()
			req := httptest.NewRequest("GET", "/v1/properties", nil)
			req.Header.Set("Traceparent", tt.header)
			req.Header.Set("Tracestate", "vendor=opaque")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d, want 200", rec.Code)
			}
			if got := inner.TraceID().String() == vecTrace; got != tt.continued {
				t.Errorf("continued = %v (trace %s), want %v", got, inner.TraceID(), tt.continued)
			}
			if inner.IsSampled() != tt.sampled {
				t.Errorf("sampled = %v, want %v", inner.IsSampled(), tt.sampled)
			}
			if want := Traceparent(trace.ContextWithSpanContext(context.Background(), inner)); rec.Header().Get("Traceparent") != want {
				t.Errorf("response Traceparent %q, want %q", rec.Header().Get("Traceparent"), want)
			}
			spans := exp.GetSpans()
			if !tt.sampled {
				if len(spans) != 0 {
					t.Errorf("%d spans exported for an unsampled parent", len(spans))
				}
				return
			}
			if len(spans) != 1 {
				t.Fatalf("%d spans exported, want 1", len(spans))
			}
			s := spans[0]
			if s.SpanKind != trace.SpanKindServer || s.SpanContext.SpanID() != inner.SpanID() {
				t.Errorf("span %v kind %v is not the handler's server span", s.SpanContext.SpanID(), s.SpanKind)
			}
			if tt.continued {
				if s.Parent.SpanID().String() != vecSpan || !s.Parent.IsRemote() {
					t.Errorf("parent = %v, want remote %s", s.Parent.SpanID(), vecSpan)
				}
				if s.SpanContext.TraceState().Get("vendor") != "opaque" {
					t.Errorf("tracestate %q not kept", s.SpanContext.TraceState())
				}
			} else if s.Parent.IsValid() {
				t.Errorf("malformed traceparent gave parent %v, want a fresh root", s.Parent)
			}
		})
	}
}

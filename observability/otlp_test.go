package observability

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is a minimal OTLP/HTTP (protobuf) collector on loopback.
type receiver struct {
	mu       sync.Mutex
	spans    []string // span names
	services []string // service.name of each resource
	metrics  []string // metric names
	srv      *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	var resp proto.Message
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch r.URL.Path {
	case "/v1/traces":
		var req colltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rs := range req.GetResourceSpans() {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.GetKey() == "service.name" {
					rc.services = append(rc.services, kv.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					rc.spans = append(rc.spans, s.GetName())
				}
			}
		}
		resp = &colltrace.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var req collmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rm := range req.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					rc.metrics = append(rc.metrics, m.GetName())
				}
			}
		}
		resp = &collmetrics.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, r)
		return
	}
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (rc *receiver) got() (spans, services, metrics []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.spans), slices.Clone(rc.services), slices.Clone(rc.metrics)
}

// The OTLP exporters read their endpoint from the process environment
// (autoexport and otlptracehttp use os.Getenv), so these tests set it with
// t.Setenv and cannot run in parallel.
func clearOTelEnv(t *testing.T) {
	for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_SERVICE_NAME", "OTEL_SDK_DISABLED", "OTEL_TRACES_SAMPLER",
		"OTEL_RESOURCE_ATTRIBUTES", "OTEL_EXPORTER_OTLP_HEADERS"} {
		t.Setenv(k, "")
	}
}

func TestOTLPExportWhenEndpointSet(t *testing.T) {
	clearOTelEnv(t)
	rc := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "edge-otlp-test")

	tel, err := New(context.Background(), Config{Getenv: os.Getenv})
	if err != nil {
		t.Fatal(err)
	}
	if got := tel.TracesExporter(); got != "otlp" {
		t.Errorf("TracesExporter = %q, want otlp", got)
	}
	ctx, parent := tel.Tracer().Start(context.Background(), "GET /v1/properties")
	_, child := tel.Tracer().Start(ctx, "pms.snapshot")
	child.End()
	parent.End()
	tel.Metrics().KeyReload(ctx, true)

	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tel.Shutdown(sctx); err != nil { // flushes both signals
		t.Fatalf("Shutdown: %v", err)
	}
	spans, services, metrics := rc.got()
	slices.Sort(spans)
	if !slices.Equal(spans, []string{"GET /v1/properties", "pms.snapshot"}) {
		t.Errorf("receiver got spans %q", spans)
	}
	if len(services) == 0 || services[0] != "edge-otlp-test" {
		t.Errorf("resource service.name = %q", services)
	}
	if !slices.Contains(metrics, "partner_edge.keys.reloads") {
		t.Errorf("receiver got metrics %q, want partner_edge.keys.reloads", metrics)
	}
}

func TestOTLPNoneExportsNothing(t *testing.T) {
	clearOTelEnv(t)
	rc := newReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.srv.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "none")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")

	tel, err := New(context.Background(), Config{Getenv: os.Getenv})
	if err != nil {
		t.Fatal(err)
	}
	if got := tel.TracesExporter(); got != "none" {
		t.Errorf("TracesExporter = %q, want none", got)
	}
	_, span := tel.Tracer().Start(context.Background(), "GET /v1/properties")
	span.End()
	tel.Metrics().KeyReload(context.Background(), true)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if spans, _, metrics := rc.got(); len(spans) != 0 || len(metrics) != 0 {
		t.Errorf("receiver got spans %q and metrics %q with exporters none", spans, metrics)
	}
}

func TestUnknownExporterIsAnError(t *testing.T) {
	clearOTelEnv(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "carrier-pigeon")
	_, err := New(context.Background(), Config{Getenv: os.Getenv})
	if err == nil || !strings.Contains(err.Error(), "OTEL_TRACES_EXPORTER") {
		t.Fatalf("OTEL_TRACES_EXPORTER=carrier-pigeon: err = %v, want one naming the variable", err)
	}
}

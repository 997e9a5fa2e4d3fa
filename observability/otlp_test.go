package observability

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

// receiver is testkit's OTLP collector, answering what the tests below
// compare.
type receiver struct {
	*testkit.OTLPReceiver
}

func newReceiver(t *testing.T) receiver { return receiver{testkit.NewOTLPReceiver(t)} }

// got is the names of the spans received, the service.name of each, and
// the names of the metrics.
func (rc receiver) got() (spans, services, metrics []string) {
	for _, s := range rc.Spans() {
		spans, services = append(spans, s.Name), append(services, s.Service)
	}
	return spans, services, rc.Metrics()
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
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
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
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
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

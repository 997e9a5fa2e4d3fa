package pms

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/partner-edge/partner-edge/observability"
)

// newTelemetry is the edge's telemetry with an in-memory span exporter.
func newTelemetry(t *testing.T) (*observability.Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tel, err := observability.New(context.Background(), observability.Config{SpanExporter: exp, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel, exp
}

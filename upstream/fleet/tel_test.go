package fleet

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// tel is the real OTel SDK with an in-memory span exporter and a manual
// metric reader.
type tel struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	meter  metric.Meter
}

func newTel(t *testing.T) *tel {
	t.Helper()
	tl := &tel{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	tl.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(tl.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tl.reader))
	tl.meter = mp.Meter("test")
	t.Cleanup(func() { _ = tl.tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	return tl
}

func (tl *tel) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tl.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// counter is the value of a sum data point of name with attribute key=value.
func (tl *tel) counter(t *testing.T, name, key, value string) int64 {
	t.Helper()
	for _, sm := range tl.collect(t).ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, dp := range s.DataPoints {
					if v, ok := dp.Attributes.Value(attribute.Key(key)); ok && v.AsString() == value {
						return dp.Value
					}
				}
			}
		}
	}
	t.Fatalf("no %s{%s=%q}", name, key, value)
	return 0
}

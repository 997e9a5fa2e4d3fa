package testkit

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

// Telemetry is the real OpenTelemetry SDK for a test: spans kept in memory
// (Spans), metrics read on demand (Counter, Gauge, Histogram), both shut
// down when the test ends. Hand TracerProvider and Meter to the code under
// test.
type Telemetry struct {
	Spans          *tracetest.InMemoryExporter
	TracerProvider *sdktrace.TracerProvider
	Meter          metric.Meter
	reader         *sdkmetric.ManualReader
}

// NewTelemetry is a Telemetry shut down by t's cleanup.
func NewTelemetry(t testing.TB) *Telemetry {
	t.Helper()
	tl := &Telemetry{Spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	tl.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(tl.Spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tl.reader))
	tl.Meter = mp.Meter("test")
	t.Cleanup(func() { _ = tl.TracerProvider.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	return tl
}

func (tl *Telemetry) collect(t testing.TB) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tl.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// Counter is the value of the int64 sum data point of name with attribute
// key=value; none fails t.
func (tl *Telemetry) Counter(t testing.TB, name, key, value string) int64 {
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

// Gauge is the value of the only data point of the int64 gauge name; none
// fails t.
func (tl *Telemetry) Gauge(t testing.TB, name string) int64 {
	t.Helper()
	for _, sm := range tl.collect(t).ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == name && len(g.DataPoints) == 1 {
				return g.DataPoints[0].Value
			}
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// Histogram is the data points of the float64 histogram name; nil: none.
func (tl *Telemetry) Histogram(t testing.TB, name string) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	for _, sm := range tl.collect(t).ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
				return h.DataPoints
			}
		}
	}
	return nil
}

package testkit

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// What the code under test records through Telemetry is read back: spans,
// a counter by attribute, a gauge, a histogram.
func TestTelemetry(t *testing.T) {
	tl := NewTelemetry(t)
	ctx := context.Background()
	_, span := tl.TracerProvider.Tracer("t").Start(ctx, "op")
	span.End()
	c, _ := tl.Meter.Int64Counter("c")
	c.Add(ctx, 2, metric.WithAttributes(attribute.String("kind", "a")))
	c.Add(ctx, 5, metric.WithAttributes(attribute.String("kind", "b")))
	g, _ := tl.Meter.Int64Gauge("g")
	g.Record(ctx, 7)
	h, _ := tl.Meter.Float64Histogram("h")
	h.Record(ctx, 0.5)
	if n := len(tl.Spans.GetSpans()); n != 1 || tl.Spans.GetSpans()[0].Name != "op" {
		t.Errorf("spans %v", tl.Spans.GetSpans())
	}
	if got := tl.Counter(t, "c", "kind", "b"); got != 5 {
		t.Errorf("counter c{kind=b} = %d, want 5", got)
	}
	if got := tl.Gauge(t, "g"); got != 7 {
		t.Errorf("gauge = %d, want 7", got)
	}
	if dps := tl.Histogram(t, "h"); len(dps) != 1 || dps[0].Count != 1 || dps[0].Sum != 0.5 {
		t.Errorf("histogram %+v", dps)
	}
	if dps := tl.Histogram(t, "none"); dps != nil {
		t.Errorf("histogram of no instrument: %+v", dps)
	}
}

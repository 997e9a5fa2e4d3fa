package upstream

import (
	"context"
	"strings"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/partner-edge/partner-edge/mapping"
)

// Every reason of mapping.Reasons is a series from the start; rejections
// count by reason, an unknown reason as "unknown", and each adds a span
// event to the recording span (the real OTel SDK reads both).
func TestRejectionMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	m, err := NewRejectionMetrics(mp.Meter("test"))
	if err != nil {
		t.Fatal(err)
	}
	counts := func() map[string]int64 {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, sm := range rm.ScopeMetrics {
			for _, mt := range sm.Metrics {
				if mt.Name != "partner_edge.mapping.rejections" {
					continue
				}
				for _, p := range mt.Data.(metricdata.Sum[int64]).DataPoints {
					v, _ := p.Attributes.Value("reason")
					out[v.AsString()] = p.Value
				}
			}
		}
		return out
	}
	before := counts()
	for _, r := range mapping.Reasons {
		if v, ok := before[string(r)]; !ok || v != 0 {
			t.Errorf("reason %s before any rejection: %d (present %v), want a 0 series", r, v, ok)
		}
	}

	ctx, span := tp.Tracer("test").Start(context.Background(), "pms.snapshot")
	m.Rejected(ctx, "HTL-1", mapping.ReasonEmptyName)
	m.Rejected(ctx, "HTL-1", mapping.ReasonEmptyName)
	m.Rejected(ctx, "HTL-2", "made_up")
	span.End()
	m.Rejected(context.Background(), "HTL-3", mapping.ReasonInvalidID) // no span: no event, no panic

	after := counts()
	if after[string(mapping.ReasonEmptyName)] != 2 || after["unknown"] != 1 || after[string(mapping.ReasonInvalidID)] != 1 {
		t.Errorf("counts %v", after)
	}
	if _, ok := after["made_up"]; ok {
		t.Error("an unknown reason made its own series")
	}
	var got []string
	for _, e := range exp.GetSpans()[0].Events {
		s := e.Name
		for _, kv := range e.Attributes {
			s += " " + string(kv.Key) + "=" + kv.Value.String()
		}
		got = append(got, s)
	}
	want := []string{
		"mapping.rejected partner_edge.pms.record_id=HTL-1 partner_edge.mapping.reason=empty_name",
		"mapping.rejected partner_edge.pms.record_id=HTL-1 partner_edge.mapping.reason=empty_name",
		"mapping.rejected partner_edge.pms.record_id=HTL-2 partner_edge.mapping.reason=unknown",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

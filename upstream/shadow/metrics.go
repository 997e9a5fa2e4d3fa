package shadow

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
)

// Metrics are the shadow's instruments. As named in OTel (Prometheus name
// in brackets):
//
//   - partner_edge.shadow.walks (partner_edge_shadow_walks_total):
//     candidate walks; mode, result (ok, failed), pre-registered at 0.
//   - partner_edge.shadow.differences (partner_edge_shadow_differences):
//     gauge, the differences of the latest successful comparison; mode,
//     kind (added, removed, changed, rejected), pre-registered at 0.
//   - partner_edge.shadow.last_comparison
//     (partner_edge_shadow_last_comparison_timestamp_seconds): gauge, Unix
//     time of the latest successful comparison; mode. Alert when it is
//     older than a few TTLs while a candidate is set.
type Metrics struct {
	walks metric.Int64Counter
	diffs metric.Int64Gauge
	last  metric.Float64Gauge

	seen sync.Map // modes registered
}

func newMetrics(meter metric.Meter) (*Metrics, error) {
	if meter == nil {
		meter = noop.NewMeterProvider().Meter("")
	}
	m := &Metrics{}
	var errs [3]error
	m.walks, errs[0] = meter.Int64Counter("partner_edge.shadow.walks", metric.WithUnit("{walk}"),
		metric.WithDescription("Walks of the shadow candidate PMS, by mode and result (ok, failed)."))
	m.diffs, errs[1] = meter.Int64Gauge("partner_edge.shadow.differences", metric.WithUnit("{property}"),
		metric.WithDescription("Properties partners would see differently from the candidate PMS, latest comparison, by mode and kind (added, removed, changed, rejected)."))
	m.last, errs[2] = meter.Float64Gauge("partner_edge.shadow.last_comparison.timestamp", metric.WithUnit("s"),
		metric.WithDescription("Unix time of the latest successful comparison with the candidate PMS, by mode."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return m, nil
}

// attrs is the attribute set of a measurement, from name, value pairs.
func attrs(kv ...string) metric.MeasurementOption {
	var a []attribute.KeyValue
	for i := 0; i < len(kv); i += 2 {
		a = append(a, attribute.String(kv[i], kv[i+1]))
	}
	return metric.WithAttributeSet(attribute.NewSet(a...))
}

// register records every series of mode at 0, once.
func (m *Metrics) register(mode string) {
	if _, seen := m.seen.LoadOrStore(mode, true); seen {
		return
	}
	for _, result := range []string{"ok", "failed"} {
		m.walks.Add(context.Background(), 0, attrs("mode", mode, "result", result))
	}
	for _, k := range Kinds {
		m.diffs.Record(context.Background(), 0, attrs("mode", mode, "kind", k))
	}
}

// walk counts one candidate walk of mode with its result (ok, failed).
func (m *Metrics) walk(mode, result string) {
	m.walks.Add(context.Background(), 1, attrs("mode", mode, "result", result))
}

func (m *Metrics) differences(mode string, c Counts, at time.Time) {
	ctx := context.Background()
	for k, n := range map[string]int{KindAdded: c.Added, KindRemoved: c.Removed, KindChanged: c.Changed, KindRejected: c.Rejected} {
		m.diffs.Record(ctx, int64(n), attrs("mode", mode, "kind", k))
	}
	m.last.Record(ctx, float64(at.UnixNano())/1e9, attrs("mode", mode))
}

package events

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// holdMetrics observe the snapshots held for listings (hold.go), labelled
// pms (Prometheus name in brackets):
//
//   - partner_edge.list.held (partner_edge_list_held): snapshots held
//     beside the current one for list pages pinned with asOf.
//   - partner_edge.list.held.memory (partner_edge_list_held_memory_bytes):
//     what they cost, about (their references and the versions of items
//     only they hold), as reckoned at the last walk; never more than the
//     current snapshot.
func holdMetrics(meter metric.Meter, mode string, h *holds) (metric.Registration, error) {
	held, err1 := meter.Int64ObservableGauge("partner_edge.list.held", metric.WithUnit("{snapshot}"),
		metric.WithDescription("Snapshots held beside the current one for list pages pinned with asOf."))
	bytes, err2 := meter.Int64ObservableGauge("partner_edge.list.held.memory", metric.WithUnit("By"),
		metric.WithDescription("About what the snapshots held for asOf cost beyond the current one."))
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	set := metric.WithAttributeSet(attribute.NewSet(attribute.String("pms", mode)))
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		n, b := h.stats()
		o.ObserveInt64(held, int64(n), set)
		o.ObserveInt64(bytes, b, set)
		return nil
	}, held, bytes)
}

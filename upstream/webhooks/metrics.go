package webhooks

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// metrics are the Deliverer's instruments. As named in OTel (Prometheus
// name in brackets):
//
//   - partner_edge.webhooks.attempts
//     (partner_edge_webhooks_attempts_total): attempts this instance made,
//     by outcome (an Outcome: delivered, http_status, redirect, timeout,
//     address_refused, ...).
//   - partner_edge.webhooks.lag (partner_edge_webhooks_lag_seconds): from
//     an event's occurredAt to its delivery's 2xx, per event delivered.
//   - partner_edge.webhooks.endpoints (partner_edge_webhooks_endpoints):
//     endpoints by status (enabled, disabled), as the last scan of the
//     Store found them.
//   - partner_edge.webhooks.disabled
//     (partner_edge_webhooks_disabled_total): endpoints this instance
//     disabled, by cause: the last attempt's outcome after the schedule's
//     last attempt, or events_expired (the feed lost its position).
type metrics struct {
	attempts metric.Int64Counter
	lag      metric.Float64Histogram
	disabled metric.Int64Counter
	byOut    map[Outcome]metric.AddOption // attempts and disabled, by outcome
	reg      metric.Registration
	enabled  atomic.Int64
	off      atomic.Int64
}

// lagBuckets span a delivery at once (a walk's interval, seconds) to one
// at the end of the schedule (about 28 hours).
var lagBuckets = []float64{0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 7200, 18000, 36000, 72000, 108000}

func newMetrics(meter metric.Meter) (*metrics, error) {
	m := &metrics{byOut: map[Outcome]metric.AddOption{}}
	var errs [5]error
	var eps metric.Int64ObservableGauge
	m.attempts, errs[0] = meter.Int64Counter("partner_edge.webhooks.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Webhook delivery attempts made by this instance, by outcome."))
	m.lag, errs[1] = meter.Float64Histogram("partner_edge.webhooks.lag", metric.WithUnit("s"),
		metric.WithDescription("Time from an event's occurredAt to its delivery."),
		metric.WithExplicitBucketBoundaries(lagBuckets...))
	m.disabled, errs[2] = meter.Int64Counter("partner_edge.webhooks.disabled", metric.WithUnit("{endpoint}"),
		metric.WithDescription("Webhook endpoints disabled by this instance after their last attempt, by its outcome."))
	eps, errs[3] = meter.Int64ObservableGauge("partner_edge.webhooks.endpoints", metric.WithUnit("{endpoint}"),
		metric.WithDescription("Webhook endpoints by status."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	for _, o := range slices.Concat(Outcomes, []Outcome{EventsExpired}) {
		m.byOut[o] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", string(o))))
		if o != EventsExpired {
			m.attempts.Add(context.Background(), 0, m.byOut[o])
		}
		// Every series at 0 from the start, so that the first disabling
		// is an increase an alert sees (PartnerEdgeWebhookEndpointDisabled),
		// not a series appearing at 1.
		if o != Delivered {
			m.disabled.Add(context.Background(), 0, m.byOut[o])
		}
	}
	on := metric.WithAttributeSet(attribute.NewSet(attribute.String("status", string(StatusEnabled))))
	off := metric.WithAttributeSet(attribute.NewSet(attribute.String("status", string(StatusDisabled))))
	m.reg, errs[4] = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(eps, m.enabled.Load(), on)
		o.ObserveInt64(eps, m.off.Load(), off)
		return nil
	}, eps)
	if errs[4] != nil {
		return nil, errs[4]
	}
	return m, nil
}

// attempt counts one attempt; a nil m counts nothing.
func (m *metrics) attempt(r Result) {
	if m == nil {
		return
	}
	if opt, ok := m.byOut[r.Outcome]; ok {
		m.attempts.Add(context.Background(), 1, opt)
	}
}

// delivered records the lag of an event delivered at now.
func (m *metrics) delivered(ev Event, now time.Time) {
	if m == nil || ev.OccurredAt.IsZero() {
		return
	}
	m.lag.Record(context.Background(), max(now.Sub(ev.OccurredAt).Seconds(), 0))
}

// disable counts an endpoint disabled for o.
func (m *metrics) disable(o Outcome) {
	if m == nil {
		return
	}
	if opt, ok := m.byOut[o]; ok {
		m.disabled.Add(context.Background(), 1, opt)
	}
}

// scanned sets the endpoints by status.
func (m *metrics) scanned(enabled, disabled int) {
	if m == nil {
		return
	}
	m.enabled.Store(int64(enabled))
	m.off.Store(int64(disabled))
}

func (m *metrics) close() {
	if m != nil {
		_ = m.reg.Unregister()
	}
}

package events

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// metrics are a feed's instruments, labelled pms (its mode). As named in
// OTel (Prometheus name in brackets):
//
//   - partner_edge.events.published (partner_edge_events_published_total):
//     events this instance added to the feed, by type (property.created,
//     .updated, .removed); in a fleet, the member that walked counts them.
//   - partner_edge.events.length (partner_edge_events_length): events the
//     feed holds now (a fleet member: its copy of the shared feed).
//   - partner_edge.events.age (partner_edge_events_age_seconds): age of
//     the oldest event held, 0 with none: how far back a cursor still
//     works (at most EDGE_EVENTS_RETENTION).
//   - partner_edge.events.head_age (partner_edge_events_head_age_seconds):
//     time since the walk the feed last reached (a walk with no change
//     moves it too): how far behind the PMS a partner following the feed
//     is; absent until the feed has a walk. It grows past the TTL plus a
//     walk when walks fail or the shared feed is not read.
//   - partner_edge.events.size (partner_edge_events_size_bytes): the
//     memory the events held take, as EDGE_EVENTS_MAX_BYTES counts it.
//   - partner_edge.events.refused (partner_edge_events_refused_total):
//     what this member found in the shared feed that no member wrote, by
//     cause (shared.go's alarm): every one counted, where the log says it
//     once a minute.
type metrics struct {
	counter metric.Int64Counter
	byType  [Removed + 1]metric.AddOption // by Type
	refused metric.Int64Counter
	byCause map[string]metric.AddOption // by the alarm's cause; fixed at start
	reg     metric.Registration
}

func newMetrics(meter metric.Meter, mode string, stats func() (int, int64), held func() int64, head func() int64, now func() time.Time) (*metrics, error) {
	m := &metrics{}
	var errs [7]error
	var length, size metric.Int64ObservableGauge
	var ageS, headS metric.Float64ObservableGauge
	m.counter, errs[0] = meter.Int64Counter("partner_edge.events.published", metric.WithUnit("{event}"),
		metric.WithDescription("Property change events added to the feed by this instance, by type."))
	length, errs[1] = meter.Int64ObservableGauge("partner_edge.events.length", metric.WithUnit("{event}"),
		metric.WithDescription("Property change events the feed holds."))
	ageS, errs[2] = meter.Float64ObservableGauge("partner_edge.events.age", metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest property change event the feed holds (0: none)."))
	headS, errs[4] = meter.Float64ObservableGauge("partner_edge.events.head_age", metric.WithUnit("s"),
		metric.WithDescription("Time since the walk the feed last reached."))
	size, errs[5] = meter.Int64ObservableGauge("partner_edge.events.size", metric.WithUnit("By"),
		metric.WithDescription("Memory the property change events held take, as EDGE_EVENTS_MAX_BYTES counts it."))
	m.refused, errs[6] = meter.Int64Counter("partner_edge.events.refused", metric.WithUnit("{item}"),
		metric.WithDescription("What this member found in the shared events feed that no member wrote (or lost), by cause."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	pms := attribute.String("pms", mode)
	m.byCause = make(map[string]metric.AddOption, len(alarmCauses))
	for _, c := range alarmCauses {
		m.byCause[c.cause] = metric.WithAttributeSet(attribute.NewSet(pms, attribute.String("cause", c.cause)))
		m.refused.Add(context.Background(), 0, m.byCause[c.cause])
	}
	for _, t := range Types {
		m.byType[t] = metric.WithAttributeSet(attribute.NewSet(pms, attribute.String("type", t.String())))
		m.counter.Add(context.Background(), 0, m.byType[t])
	}
	set := metric.WithAttributeSet(attribute.NewSet(pms))
	m.reg, errs[3] = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		n, oldest := stats()
		o.ObserveInt64(length, int64(n), set)
		a := 0.0
		if n > 0 {
			a = max(now().Sub(time.UnixMilli(oldest)).Seconds(), 0)
		}
		o.ObserveFloat64(ageS, a, set)
		if h := head(); h > 0 {
			o.ObserveFloat64(headS, max(now().Sub(time.UnixMilli(h)).Seconds(), 0), set)
		}
		o.ObserveInt64(size, held(), set)
		return nil
	}, length, ageS, headS, size)
	if errs[3] != nil {
		return nil, errs[3]
	}
	return m, nil
}

// published counts changes by type; a nil m counts nothing.
func (m *metrics) published(changes []Change) {
	if m == nil {
		return
	}
	var n [Removed + 1]int64
	for _, c := range changes {
		n[c.Type]++
	}
	for _, t := range Types {
		if n[t] > 0 {
			m.counter.Add(context.Background(), n[t], m.byType[t])
		}
	}
}

// forged counts n found of cause; a nil m counts nothing.
func (m *metrics) forged(cause string, n int) {
	if m == nil || n <= 0 {
		return
	}
	m.refused.Add(context.Background(), int64(n), m.byCause[cause])
}

func (m *metrics) close() { _ = m.reg.Unregister() }

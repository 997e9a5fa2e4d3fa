package upstream

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/mapping"
)

// The vocabulary of mapping rejections is mapping's (mapping.Reasons);
// counting them is upstream's, which maps PMS records (Direct.OnReject).
const (
	// AttrRejectReason is why a PMS record was not mapped (mapping.Reason).
	AttrRejectReason = attribute.Key("partner_edge.mapping.reason")
	// AttrRecordID is the rejected PMS record's id as sent (clipped to 64
	// bytes by mapping), on EventMappingRejected.
	AttrRecordID = attribute.Key("partner_edge.pms.record_id")
	// EventMappingRejected is the span event of one rejected record (the
	// walk's span: docs/contract.md section 20), with AttrRecordID and
	// AttrRejectReason.
	EventMappingRejected = "mapping.rejected"
)

// RejectionMetrics counts the PMS records that could not be mapped:
// partner_edge.mapping.rejections (partner_edge_mapping_rejections_total),
// by reason (mapping.Reasons, every one registered at 0 by
// NewRejectionMetrics, so a dashboard sees the series before the first
// rejection; a reason outside them is counted as "unknown").
type RejectionMetrics struct {
	counter metric.Int64Counter
	opts    map[mapping.Reason][]metric.AddOption // read-only after New
	unknown []metric.AddOption
}

// NewRejectionMetrics makes the instrument on meter (cmd/edge passes the
// service's meter, observability.ScopeName).
func NewRejectionMetrics(meter metric.Meter) (*RejectionMetrics, error) {
	c, err := meter.Int64Counter("partner_edge.mapping.rejections",
		metric.WithUnit("{record}"), metric.WithDescription("PMS records that could not be mapped, by reason."))
	if err != nil {
		return nil, err
	}
	m := &RejectionMetrics{counter: c, opts: make(map[mapping.Reason][]metric.AddOption, len(mapping.Reasons)),
		unknown: reasonOpts("unknown")}
	for _, r := range mapping.Reasons {
		m.opts[r] = reasonOpts(string(r))
		c.Add(context.Background(), 0, m.opts[r]...)
	}
	return m, nil
}

func reasonOpts(reason string) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", reason)))}
}

// Rejected counts one PMS record that could not be mapped, and adds a
// "mapping.rejected" event (AttrRecordID, AttrRejectReason) to the
// recording span of ctx. In a walk that counts its rejections
// (WithWalkStats), it counts there too, and only the first
// RejectionEventsPerWalk become events: the walk's span summarises the
// rest (WalkStats.Summary).
func (m *RejectionMetrics) Rejected(ctx context.Context, recordID string, reason mapping.Reason) {
	o, ok := m.opts[reason]
	if !ok {
		o, reason = m.unknown, "unknown"
	}
	m.counter.Add(ctx, 1, o...)
	if st := WalkStatsFrom(ctx); st != nil && !st.reject(recordID, reason) {
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(EventMappingRejected, trace.WithAttributes(AttrRecordID.String(recordID), AttrRejectReason.String(string(reason))))
	}
}

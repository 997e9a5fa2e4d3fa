package events

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// A walk's events keep the span of the walk that made them (its pms.walk,
// the span its load's context carries), one per walk, beside the events
// and never in their JSON: each webhook attempt at an event links to it
// (docs/observability.md, "Webhook attempts"). Only a kept walk's: a walk
// left out of the traces is linked to by nothing (docs/observability.md,
// "Walks": every link opens).

// WalkSpan is the span of the walk at Walk (Unix ms).
type WalkSpan struct {
	Walk int64
	Span trace.SpanContext
}

// SpanLen is the length of a walk's span as the stores keep it
// (AppendSpan): its trace id (16 bytes), span id (8) and flags (1).
const SpanLen = 16 + 8 + 1

// spanOf is the span of the walk whose load ctx is: the span ctx carries
// when it is valid and sampled (the walk is kept), its ids and flags only;
// zero otherwise.
func spanOf(ctx context.Context) trace.SpanContext {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		return trace.SpanContext{}
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: sc.TraceID(), SpanID: sc.SpanID(), TraceFlags: sc.TraceFlags()})
}

// AppendSpan appends sc's trace id, span id and flags to b (SpanLen
// bytes).
func AppendSpan(b []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	b = append(b, tid[:]...)
	b = append(b, sid[:]...)
	return append(b, byte(sc.TraceFlags()))
}

// ParseSpan reads what AppendSpan wrote; false for anything else (another
// length, an id of zeros).
func ParseSpan(b []byte) (trace.SpanContext, bool) {
	if len(b) != SpanLen {
		return trace.SpanContext{}, false
	}
	var cfg trace.SpanContextConfig
	copy(cfg.TraceID[:], b[:16])
	copy(cfg.SpanID[:], b[16:24])
	cfg.TraceFlags = trace.TraceFlags(b[24])
	sc := trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}

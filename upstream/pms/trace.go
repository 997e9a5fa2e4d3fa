package pms

import (
	"context"
	"errors"

	"github.com/partner-edge/partner-edge/upstream"
	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// callSpanOptions are the start options of every call span, built once:
// a variadic argument through the Tracer interface is a slice on the heap
// per call.
var callSpanOptions = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}

// noSpan is the call span without ClientConfig.Tracer: it records nothing,
// and ending it ends nothing (not the caller's span).
var noSpan = trace.SpanFromContext(context.Background())

// startCall starts the span of one logical call (a get when id is set),
// with the breaker's state; its attributes are built only for a span that
// records them (most are sampled out).
func (c *Client) startCall(ctx context.Context, name, brand, id string) (context.Context, trace.Span) {
	if !c.spans {
		return ctx, noSpan
	}
	ctx, span := c.cfg.Tracer.Start(ctx, name, callSpanOptions...)
	if span.IsRecording() {
		span.SetAttributes(upstream.AttrBrand.String(brand), upstream.AttrBreakerState.String(upstream.ParseBreakerState(c.breaker.State()).String()))
		if id != "" {
			span.SetAttributes(upstream.AttrHotelID.String(id))
		}
	}
	return ctx, span
}

// endCall records how a call ended on its span (it does not end it). cause
// is the failure before classification, err what the caller gets. NotFound
// is an answer of the PMS, not a failure: the kind is set, the status is
// not. The caller's cancellation is not a failure of the PMS either.
func endCall(span trace.Span, cause error, err *upstream.Error) {
	if err == nil || !span.IsRecording() {
		return
	}
	if isBreakerOpen(cause) {
		state := upstream.BreakerOpen
		if errors.Is(cause, gobreaker.ErrTooManyRequests) {
			state = upstream.BreakerHalfOpen
		}
		span.AddEvent(upstream.EventBreakerRejected, trace.WithAttributes(upstream.AttrBreakerState.String(state.String())))
	}
	if err.Kind == upstream.Canceled {
		span.SetAttributes(upstream.AttrPMSOutcome.String(string(upstream.PMSCanceled)))
		return
	}
	span.SetAttributes(upstream.AttrErrorKind.String(err.Kind.String()))
	if err.Kind != upstream.NotFound {
		span.SetStatus(codes.Error, err.Kind.String())
	}
}

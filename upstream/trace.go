package upstream

import (
	"context"
	"errors"

	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/problem"
)

// Names of the span of one logical PMS call (ClientConfig.Tracer). It is
// of kind Internal: it groups the attempts, whose client spans (made by a
// tracing ClientConfig.WrapTransport) are the remote calls; a Client span
// around Client spans would count each call twice in a backend's service
// graph.
const (
	SpanListHotels = "pms.list_hotels" // ListHotels: a whole list walk
	SpanGetHotel   = "pms.get_hotel"   // GetHotel
)

// EventBreakerRejected is added to the call span when the circuit breaker
// refused the call (open, or half-open with its probes taken), with
// observability.AttrBreakerState. Such a call has no attempt spans.
const EventBreakerRejected = "breaker.rejected"

// Attributes of the call span, beside observability.AttrBreakerState (the
// state when the call started), observability.AttrProblemCode (when it
// failed) and observability.AttrPMSOutcome ("canceled" when the caller left).
const (
	// AttrBrand is the brand code asked of the PMS.
	AttrBrand = attribute.Key("partner_edge.pms.brand")
	// AttrHotelID is the hotel id of a get, as sent to the PMS.
	AttrHotelID = attribute.Key("partner_edge.pms.hotel_id")
	// AttrPages is the number of list pages received in a walk.
	AttrPages = attribute.Key("partner_edge.pms.pages")
	// AttrRecords is the number of records a walk returned.
	AttrRecords = attribute.Key("partner_edge.pms.records")
)

// breakerStateName is the state as observability names it ("half_open").
func breakerStateName(gobreakerState string) string {
	return observability.ParseBreakerState(gobreakerState).String()
}

// startCall starts the span of one logical call, with the breaker's state.
func (c *Client) startCall(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx, span := c.cfg.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal))
	if span.IsRecording() {
		span.SetAttributes(attrs...)
		span.SetAttributes(observability.AttrBreakerState.String(breakerStateName(c.breaker.State())))
	}
	return ctx, span
}

// endCall records how a call ended on its span (it does not end it). err
// is what the caller gets: nil, a *problem.Error, or the caller's own
// context error. PROPERTY_NOT_FOUND is an answer of the PMS, not a failure:
// the code is set, the status is not. The caller's cancellation is not a
// failure of the PMS either.
func endCall(span trace.Span, cause, err error) {
	if err == nil || !span.IsRecording() {
		return
	}
	if errors.Is(cause, gobreaker.ErrOpenState) || errors.Is(cause, gobreaker.ErrTooManyRequests) {
		state := observability.BreakerOpen
		if errors.Is(cause, gobreaker.ErrTooManyRequests) {
			state = observability.BreakerHalfOpen
		}
		span.AddEvent(EventBreakerRejected, trace.WithAttributes(observability.AttrBreakerState.String(state.String())))
	}
	var pe *problem.Error
	if !errors.As(err, &pe) {
		span.SetAttributes(observability.AttrPMSOutcome.String(string(observability.PMSCanceled)))
		return
	}
	span.SetAttributes(observability.AttrProblemCode.String(string(pe.Code)))
	if pe.Code != problem.PropertyNotFound {
		span.SetStatus(codes.Error, string(pe.Code))
	}
}

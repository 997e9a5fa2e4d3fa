package upstream

import (
	"context"
	"errors"

	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Names of the span of one logical PMS call (ClientConfig.Tracer). It is
// of kind Internal: it groups the attempts, whose client spans (made by a
// tracing ClientConfig.WrapTransport) are the remote calls; a Client span
// around Client spans would count each call twice in a backend's service
// graph.
const (
	SpanListHotels = "pms.list_hotels" // WalkHotels: a whole list walk, its pages beneath
	SpanGetHotel   = "pms.get_hotel"   // GetHotel
)

// EventBreakerRejected is added to the call span when the circuit breaker
// refused the call (open, or half-open with its probes taken), with
// AttrBreakerState. Such a call has no attempt spans.
const EventBreakerRejected = "breaker.rejected"

// Attributes of the call span, beside AttrBreakerState (the state when the
// call started) and AttrPMSOutcome ("canceled" when the caller left). A
// failed call carries AttrErrorKind; the problem code is the edge's to
// choose and is set on the server span, never here (upstream names no
// problem code).
const (
	// AttrBrand is the brand code asked of the PMS.
	AttrBrand = attribute.Key("partner_edge.pms.brand")
	// AttrHotelID is the hotel id of a get, as sent to the PMS.
	AttrHotelID = attribute.Key("partner_edge.pms.hotel_id")
	// AttrPages is the number of list pages received in a walk.
	AttrPages = attribute.Key("partner_edge.pms.pages")
	// AttrErrorKind is the Kind of a failed call ("not_found",
	// "bad_gateway", ...).
	AttrErrorKind = attribute.Key("partner_edge.pms.error_kind")
	// AttrRecords is the number of records a walk returned.
	AttrRecords = attribute.Key("partner_edge.pms.records")
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
		span.SetAttributes(AttrBrand.String(brand), AttrBreakerState.String(ParseBreakerState(c.breaker.State()).String()))
		if id != "" {
			span.SetAttributes(AttrHotelID.String(id))
		}
	}
	return ctx, span
}

// endCall records how a call ended on its span (it does not end it). cause
// is the failure before classification, err what the caller gets. NotFound
// is an answer of the PMS, not a failure: the kind is set, the status is
// not. The caller's cancellation is not a failure of the PMS either.
func endCall(span trace.Span, cause error, err *Error) {
	if err == nil || !span.IsRecording() {
		return
	}
	if isBreakerOpen(cause) {
		state := BreakerOpen
		if errors.Is(cause, gobreaker.ErrTooManyRequests) {
			state = BreakerHalfOpen
		}
		span.AddEvent(EventBreakerRejected, trace.WithAttributes(AttrBreakerState.String(state.String())))
	}
	if err.Kind == Canceled {
		span.SetAttributes(AttrPMSOutcome.String(string(PMSCanceled)))
		return
	}
	span.SetAttributes(AttrErrorKind.String(err.Kind.String()))
	if err.Kind != NotFound {
		span.SetStatus(codes.Error, err.Kind.String())
	}
}

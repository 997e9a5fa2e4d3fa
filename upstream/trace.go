package upstream

import (
	"go.opentelemetry.io/otel/attribute"
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

package edge

import (
	"context"
	"errors"
	"net/http"

	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// upstreamProblem is how the edge answers one kind of upstream error.
type upstreamProblem struct {
	code   problem.Code // its status and title come from the problem registry
	detail string       // partner-safe: no host, path, PMS status or Go error
	// retryAfter sends the error's RetryAfter as Retry-After.
	retryAfter bool
}

// propertyNotFoundDetail is PROPERTY_NOT_FOUND's detail, whichever of the
// snapshot or the PMS said so.
const propertyNotFoundDetail = "No property with this id is available to this API key."

// The details of the events feed's cursor problems (docs/contract.md
// section 23).
const (
	cursorExpiredDetail = "The after cursor is older than the events kept. List the properties again and follow the feed from the list's meta.events.next."
	unknownCursorDetail = "after is not a cursor this API issued: pass meta.events.next of a list or events answer as received."
	// asOf's (section 25).
	snapshotExpiredDetail = "The snapshot asOf names is no longer held. List the properties again from page 1 without asOf and pin the other pages to the new meta.events.next."
	unknownAsOfDetail     = "asOf is not a list cursor this API issued: pass meta.events.next of the first page of your listing as received."
	// Enabling a webhook endpoint's (section 26).
	endpointExpiredDetail = "The events after this endpoint's last delivery are no longer kept. List the properties again, then enable the endpoint once more: delivery starts from then."
)

// upstreamProblems is the one table from upstream.Kind to what a partner
// sees (docs/contract.md section 7, 10 and 11). upstream.Canceled is absent: a partner
// who left gets no answer (see problemOf). A kind absent from the table
// answers as upstream.Internal.
var upstreamProblems = map[upstream.Kind]upstreamProblem{
	upstream.NotFound: {code: problem.PropertyNotFound,
		detail: propertyNotFoundDetail},
	upstream.Unavailable: {code: problem.ServiceUnavailable, retryAfter: true,
		detail: "A system behind the API is temporarily unavailable. Retry after the number of seconds in Retry-After."},
	upstream.Timeout: {code: problem.GatewayTimeout,
		detail: "The property system did not answer in time. Retry later."},
	upstream.BadGateway: {code: problem.BadGateway,
		detail: "A system behind the API failed or gave an invalid answer. Retry later and quote the requestId when contacting support."},
	upstream.Internal: {code: problem.InternalError,
		detail: "An unexpected fault occurred in the API. It has been logged; retry later and quote the requestId when contacting support."},
}

// problemOf is the one place where an error becomes what a partner sees: a
// *problem.Error in err's chain (with a registered code) is the edge's own
// answer, as is; anything else is a domain error whose kind upstream's one
// classifier names (upstream.Classify, against the request's context) and
// upstreamProblems turns into the problem. gone reports that the partner
// went away (the context was cancelled and err is that cancellation):
// nothing is answered, cause is what the access log records. Cancelled
// while the partner is still here means the edge is stopping: 503.
func problemOf(ctx context.Context, err error) (pe *problem.Error, cause error, gone bool) {
	if errors.As(err, &pe) && pe != nil && problem.Known(pe.Code) {
		return pe, pe.Err, false
	}
	switch {
	case errors.Is(err, webhooks.ErrNotFound):
		return problem.New(problem.WebhookEndpointNotFound, "No webhook endpoint with this id belongs to this API key."), err, false
	case errors.Is(err, webhooks.ErrExists):
		return problem.New(problem.WebhookEndpointExists, "This API key already has a webhook endpoint with this url."), err, false
	case errors.Is(err, webhooks.ErrLimit):
		return problem.New(problem.WebhookEndpointLimit, "This API key has %d webhook endpoints, the most it may have: delete one first.", webhooks.MaxPerKey), err, false
	case errors.Is(err, webhooks.ErrExpired): // before events': enabling wraps the feed's answer
		return problem.New(problem.EventsCursorExpired, endpointExpiredDetail), err, false
	case errors.Is(err, events.ErrCursorExpired):
		return problem.New(problem.EventsCursorExpired, cursorExpiredDetail), err, false
	case errors.Is(err, events.ErrSnapshotExpired):
		return problem.New(problem.ListSnapshotExpired, snapshotExpiredDetail), err, false
	case errors.Is(err, errUnknownAsOf):
		return &problem.Error{Code: problem.ValidationFailed, Detail: "One or more query parameters are out of range.",
			Errors: []problem.FieldError{{Field: "asOf", Code: problem.FieldInvalidFormat, Detail: unknownAsOfDetail}}}, err, false
	case errors.Is(err, events.ErrCursorUnknown): // one the query check let through: never issued (eventsParams)
		return &problem.Error{Code: problem.ValidationFailed, Detail: "One or more query parameters are out of range.",
			Errors: []problem.FieldError{{Field: "after", Code: problem.FieldInvalidFormat, Detail: unknownCursorDetail}}}, err, false
	}
	if err == nil {
		err = errors.New("edge: nil error answered")
	}
	ue := upstream.Classify(ctx, err, upstream.Internal)
	if ue.Kind == upstream.Canceled {
		if ctx.Err() != nil {
			return nil, ue, true
		}
		ue = &upstream.Error{Kind: upstream.Unavailable, Err: ue}
	}
	p, ok := upstreamProblems[ue.Kind]
	if !ok {
		p = upstreamProblems[upstream.Internal]
	}
	pe = &problem.Error{Code: p.code, Detail: p.detail, Err: ue}
	if p.retryAfter {
		pe.RetryAfter = ue.RetryAfter
	}
	return pe, ue, false
}

// fail answers err as problem+json (problemOf) and records its code and
// cause for the access log; a partner who has gone away gets no answer at
// all, and the access log says so (499).
func (s responder) fail(w http.ResponseWriter, r *http.Request, err error) {
	st := stateFrom(r.Context())
	pe, cause, gone := problemOf(r.Context(), err)
	if gone {
		st.cause = cause
		st.w.StatusCode = statusClientClosed
		return
	}
	pe = s.problems.Write(w, r, st.requestID, pe)
	st.code, st.cause = pe.Code, pe.Err
}

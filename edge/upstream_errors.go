package edge

import (
	"errors"
	"net/http"

	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
)

// upstreamProblem is how the edge answers one kind of upstream error.
type upstreamProblem struct {
	code   problem.Code // its status and title come from the problem registry
	detail string       // partner-safe: no host, path, PMS status or Go error
	// retryAfter sends the error's RetryAfter as Retry-After.
	retryAfter bool
}

// upstreamProblems is the one table from upstream.Kind to what a partner
// sees (DECISIONS.md 7, 10 and 11). upstream.Canceled is absent: a partner
// who left gets no answer (see failUpstream). A kind absent from the table
// answers as upstream.Internal.
var upstreamProblems = map[upstream.Kind]upstreamProblem{
	upstream.NotFound: {code: problem.PropertyNotFound,
		detail: "No property with this id is available to the API key."},
	upstream.Unavailable: {code: problem.ServiceUnavailable, retryAfter: true,
		detail: "A system behind the API is temporarily unavailable. Retry after the number of seconds in Retry-After."},
	upstream.Timeout: {code: problem.GatewayTimeout,
		detail: "The property system did not answer in time. Retry later."},
	upstream.BadGateway: {code: problem.BadGateway,
		detail: "A system behind the API failed or gave an invalid answer. Retry later and quote the requestId when contacting support."},
	upstream.Internal: {code: problem.InternalError,
		detail: "An unexpected fault occurred in the API. It has been logged; retry later and quote the requestId when contacting support."},
}

// upstreamError turns an error of a Catalog into the problem answered. An
// error that is not an *upstream.Error is an internal fault.
func upstreamError(err error) *problem.Error {
	var ue *upstream.Error
	if !errors.As(err, &ue) {
		ue = &upstream.Error{Kind: upstream.Internal, Err: err}
	}
	p, ok := upstreamProblems[ue.Kind]
	if !ok {
		p = upstreamProblems[upstream.Internal]
	}
	pe := &problem.Error{Code: p.code, Detail: p.detail, Err: err}
	if p.retryAfter {
		pe.RetryAfter = ue.RetryAfter
	}
	return pe
}

// failUpstream answers an error of the catalog. A partner who has gone away
// gets no answer at all, and the access log says so.
func (s *server) failUpstream(w http.ResponseWriter, r *http.Request, err error) {
	// A Catalog returns *upstream.Error; anything else (a bare context
	// error of a decorator or a fake) is classified by upstream's one rule,
	// against this request's context.
	err = upstream.Classify(r.Context(), err, upstream.Internal)
	if upstream.KindOf(err) == upstream.Canceled && r.Context().Err() != nil {
		st := stateFrom(r.Context())
		st.cause = err
		st.w.status = statusClientClosed
		return
	}
	if upstream.KindOf(err) == upstream.Canceled {
		// Cancelled, yet the partner is still here: the edge is stopping.
		err = &upstream.Error{Kind: upstream.Unavailable, Err: err}
	}
	s.fail(w, r, upstreamError(err))
}

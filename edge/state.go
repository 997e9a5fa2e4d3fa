package edge

import (
	"context"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
)

// state is everything the edge learns about one request. It is allocated
// once per request, with the response writer wrapper and the request's
// context inside it, so the middleware chain costs one allocation.
type state struct {
	requestID     string
	start         time.Time // when the edge got the request (Config.Now)
	correlationID string    // the caller's, when valid; "" otherwise
	correlationOK bool      // no Svc-Correlation-Id, or a valid one
	key           *keys.Key
	keyID         string       // the key's (or token client's) id once identified, before authorisation: refusals log it too (docs/contract.md section 17)
	authMethod    string       // authMethodAPIKey or authMethodOAuth, once a credential was sent
	client        clientAddr   // resolved client address (clientaddr.go)
	code          problem.Code // the problem answered, if any
	cause         error        // the problem's underlying cause, for logs
	w             statusWriter
	idHeader      [1]string               // backs the Svc-Request-Id header value
	callerIDs     upstream.CallerIDs      // the ids above, answered by pointer for upstream.CallerIDsKey (no boxing per PMS call)
	cache         observability.CacheSlot // the cache's answer, for the duration metric
	slot          shedSlot                // the request's place among MaxConcurrent (shed.go)
	route         *chi.Context            // chi's routing context, from server.routeCtxs (withState)
	ctx           reqContext
}

type stateKey struct{}

func stateFrom(ctx context.Context) *state {
	st, _ := ctx.Value(stateKey{}).(*state)
	if st == nil {
		return &state{correlationOK: true}
	}
	return st
}

// RequestID returns the request's Svc-Request-Id ("" outside the edge).
func RequestID(ctx context.Context) string { return stateFrom(ctx).requestID }

// CorrelationID returns the caller's valid Svc-Correlation-Id, or "".
func CorrelationID(ctx context.Context) string { return stateFrom(ctx).correlationID }

// Key returns the authenticated key, or nil before authentication.
func Key(ctx context.Context) *keys.Key { return stateFrom(ctx).key }

// statusWriter is the request's writer: observability.StatusRecorder (the
// status and size, for recovery and the access log) and the backing array
// of the Content-Length value (setJSONHeaders), so that neither allocates.
type statusWriter struct {
	observability.StatusRecorder
	lenHeader [1]string
}

// Status is the status written so far (0 when nothing was written).
func (sw *statusWriter) Status() int { return sw.StatusCode }

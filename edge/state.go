package edge

import (
	"context"
	"net/http"
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

// statusWriter records the status and size of a response, for recovery and
// access logs.
type statusWriter struct {
	http.ResponseWriter
	status    int
	bytes     int64
	lenHeader [1]string // backs the Content-Length header value (setJSONHeaders)
}

func (sw *statusWriter) WriteHeader(code int) {
	if sw.status == 0 {
		sw.status = code
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Write(b []byte) (int, error) {
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	n, err := sw.ResponseWriter.Write(b)
	sw.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (sw *statusWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

// Status is the status written so far (0 when nothing was written).
func (sw *statusWriter) Status() int { return sw.status }

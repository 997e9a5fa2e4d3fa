package edge

import (
	"context"
	"net/netip"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/partner-edge/partner-edge/edge/internal/clientaddr"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/oauth"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
)

// state is everything the edge learns about one request, with the response
// writer wrapper and the request's context inside it: the middleware chain
// costs one allocation.
type state struct {
	requestID     string
	traceIDs      string    // the server span's trace and span ids in hex (requestIDs); "": no span
	start         time.Time // when the edge got the request (Config.Now)
	correlationID string    // the caller's, when valid; "" otherwise
	correlationOK bool      // no Svc-Correlation-Id, or a valid one
	key           *keys.Key
	keyID         string          // the key's (or token client's) id once identified, before authorisation: refusals log it too (docs/contract.md section 17)
	authMethod    string          // authMethodAPIKey or authMethodOAuth, once a credential was sent
	token         *oauth.Token    // the verified access token (authMethodOAuth): its scopes (requireScope)
	bodyRead      bool            // the handler read the request's whole body (closeOnBody: keep the connection)
	client        clientaddr.Addr // resolved client address (resolveClient)
	code          problem.Code    // the problem answered, if any
	cause         error           // the problem's underlying cause, for logs
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

// Key returns the authenticated key, or nil before authentication.
func Key(ctx context.Context) *keys.Key { return stateFrom(ctx).key }

// statusWriter is the request's writer: observability.StatusRecorder (the
// status and size, for recovery and the access log) and the backing array
// of the Content-Length value (setJSONHeaders), so that neither allocates.
type statusWriter struct {
	observability.StatusRecorder
	lenHeader [1]string
}

// DefaultRequestTimeout is Config.RequestTimeout's default (operations.md
// EDGE_REQUEST_TIMEOUT).
const DefaultRequestTimeout = 10 * time.Second

// reqContext is the context of one request, embedded in its state, so the
// request's values cost one link instead of a chain of them: it answers the
// state, the caller ids, the cache's slot and chi's routing context itself,
// over context.WithDeadline's context for the request's one deadline
// (docs/operations.md, EDGE_REQUEST_TIMEOUT; past it, 504 GATEWAY_TIMEOUT).
type reqContext struct {
	context.Context // context.WithDeadline over net/http's, with the span
	st              *state
	cancel          context.CancelFunc
}

// init sets c for st with the request's deadline.
func (c *reqContext) init(parent context.Context, st *state, deadline time.Time) {
	c.Context, c.cancel = context.WithDeadline(parent, deadline)
	c.st = st
}

// Value answers the state's keys; every other key is the deadline
// context's, so that a derived context finds the cancellation it is tied to
// and needs no goroutine to follow it.
func (c *reqContext) Value(key any) any {
	switch key.(type) {
	case stateKey:
		return c.st
	case upstream.CallerIDsKey:
		return &c.st.callerIDs
	case observability.CacheSlotKey:
		return &c.st.cache
	}
	if key == chi.RouteCtxKey {
		return c.st.route
	}
	return c.Context.Value(key)
}

func (c *reqContext) String() string { return "edge.reqContext" }

// ParseTrustedProxies reads EDGE_TRUSTED_PROXIES (clientaddr.ParseTrusted):
// comma-separated CIDRs (a bare address is a single host). Empty means
// none. The error names the entry that is not a CIDR.
func ParseTrustedProxies(s string) ([]netip.Prefix, error) { return clientaddr.ParseTrusted(s) }

package edge

import (
	"context"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// DefaultRequestTimeout is Config.RequestTimeout's default (operations.md
// EDGE_REQUEST_TIMEOUT).
const DefaultRequestTimeout = 10 * time.Second

// reqContext is the context of one request, embedded in its state, so the
// request's values cost one link instead of a chain of them. It answers
// the state (stateFrom), the caller ids the upstream client sends
// (upstream.CallerIDsKey), the cache's slot and chi's routing context from
// the state itself, over context.WithDeadline's context for the request's
// one overall deadline, Config.RequestTimeout after it started: PMS calls,
// their retries and waits for a shared cache load all run under it, and a
// request still waiting when it passes answers 504 GATEWAY_TIMEOUT
// (problemOf).
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

// Value answers the state and the caller ids; every other key is the
// deadline context's, so that a context derived from this one finds the
// cancellation it is tied to and needs no goroutine to follow it.
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

// stop releases the deadline's timer: the request has been answered.
func (c *reqContext) stop() { c.cancel() }

package edge

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// DefaultRequestTimeout is Config.RequestTimeout's default (operations.md
// EDGE_REQUEST_TIMEOUT).
const DefaultRequestTimeout = 10 * time.Second

// reqContext is the context of one request, embedded in its state, so the
// request costs one context instead of a chain of them. It carries:
//
//   - the state (stateFrom) and the caller ids the upstream client sends
//     (upstream.CallerIDsKey), answered from the state itself;
//   - the request's one overall deadline, Config.RequestTimeout after it
//     started: PMS calls, their retries and waits for a shared cache load
//     all run under it, and a request still waiting when it passes answers
//     504 GATEWAY_TIMEOUT (problemOf).
//
// The deadline's timer is started only when something waits on Done (a
// PMS call, a wait for a cache load): a request answered from the cache
// reads Deadline and Err at most, and those need no timer. Until then Err
// compares the clock with the deadline itself.
type reqContext struct {
	context.Context // the parent: net/http's, with chi's route and the span

	st       *state
	deadline time.Time

	mu      sync.Mutex  // guards starting the timer
	started atomic.Bool // timed and cancel are set: Done was asked
	timed   context.Context
	cancel  context.CancelFunc
}

func (c *reqContext) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

func (c *reqContext) Done() <-chan struct{} {
	if c.started.Load() { // the Store below happened before: timed is set
		return c.timed.Done()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started.Load() {
		c.timed, c.cancel = context.WithDeadline(c.Context, c.deadline)
		c.started.Store(true)
	}
	return c.timed.Done()
}

func (c *reqContext) Err() error {
	if c.started.Load() {
		return c.timed.Err()
	}
	if err := c.Context.Err(); err != nil {
		return err
	}
	if !time.Now().Before(c.deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// Value answers the state and the caller ids; every other key is the
// parent's, or, once the timer runs, its context's, so that a context
// derived from this one finds the cancellation it is tied to (as
// context.WithDeadline's children do) and needs no goroutine to follow it.
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
	if c.started.Load() {
		return c.timed.Value(key)
	}
	return c.Context.Value(key)
}

func (c *reqContext) String() string { return "edge.reqContext" }

// stop releases the deadline's timer, if it was started: the request has
// been answered.
func (c *reqContext) stop() {
	if c.started.Load() {
		c.cancel()
	}
}

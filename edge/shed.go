package edge

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/partner-edge/partner-edge/problem"
)

// healthPath is never shed: a load balancer must see an overloaded edge
// as alive (it is, and it recovers by itself), not pull it and push its
// load onto the others.
const healthPath = "/v1/health"

// shed caps the requests in progress at Config.MaxConcurrent: one more is
// answered at once, unqueued, 503 SERVICE_UNAVAILABLE with Retry-After: 1
// (docs/operations.md, "Shedding and capacity"). The count is one atomic
// integer: no lock, no allocation. A request holds its place in its state
// (shedSlot), so it can give it up while it waits on something that is no
// work of the edge's (a slow issuer's keys, docs/contract.md section 17).
func (s *server) shed(next http.Handler) http.Handler {
	limit := int64(s.cfg.MaxConcurrent)
	if limit <= 0 {
		return next
	}
	var inFlight atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == healthPath {
			next.ServeHTTP(w, r)
			return
		}
		if inFlight.Add(1) > limit {
			inFlight.Add(-1)
			s.fail(w, r, s.shedError(r))
			return
		}
		st := stateFrom(r.Context())
		st.slot = shedSlot{inFlight: &inFlight, limit: limit, held: true}
		defer st.slot.release()
		next.ServeHTTP(w, r)
	})
}

// shedError is the answer of a request over the cap, counted.
func (s *server) shedError(r *http.Request) error {
	if s.metrics != nil {
		s.metrics.Shed(r.Context())
	}
	return &problem.Error{Code: problem.ServiceUnavailable, RetryAfter: time.Second,
		Detail: "The API is at capacity. Retry after the number of seconds in Retry-After."}
}

// shedSlot is a request's place among the MaxConcurrent (shed). Only the
// request's own goroutine touches it. The zero value holds nothing and
// reacquires freely (shedding off, or a request outside /v1's chain).
type shedSlot struct {
	inFlight *atomic.Int64 // the server's count; nil: shedding off
	limit    int64
	held     bool
}

// release gives the place up (idempotent): the request waits on something
// outside the edge and holds no one else up meanwhile.
func (sl *shedSlot) release() {
	if sl.held {
		sl.inFlight.Add(-1)
		sl.held = false
	}
}

// reacquire takes a place again after release, and reports false when the
// edge is at capacity: then the request is shed as it would have been on
// arrival.
func (sl *shedSlot) reacquire() bool {
	if sl.inFlight == nil || sl.held {
		return true
	}
	if sl.inFlight.Add(1) > sl.limit {
		sl.inFlight.Add(-1)
		return false
	}
	sl.held = true
	return true
}

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

// shed caps the requests in progress at Config.MaxConcurrent. One more
// is answered at once, without queueing, with 503 SERVICE_UNAVAILABLE and
// Retry-After: 1: a partner retries a second later rather than waiting in a
// queue that only lengthens every answer. The count is a single atomic
// integer of this server, so shedding costs no lock and no allocation.
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
			if s.metrics != nil {
				s.metrics.Shed(r.Context())
			}
			s.fail(w, r, &problem.Error{Code: problem.ServiceUnavailable, RetryAfter: time.Second,
				Detail: "The API is at capacity. Retry after the number of seconds in Retry-After."})
			return
		}
		defer inFlight.Add(-1)
		next.ServeHTTP(w, r)
	})
}

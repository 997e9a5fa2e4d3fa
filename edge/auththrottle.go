package edge

import (
	"errors"
	"net/http"

	"github.com/partner-edge/partner-edge/problem"
)

// authThrottleWindow is the window of EDGE_AUTH_FAIL_LIMIT: failures a minute.
const authThrottleWindow = 60

// authFailLimit is the bucket of the failed-authentication throttle: n
// failures at once, refilled at n a minute. n <= 0 disables the throttle.
func authFailLimit(n int) (Limit, bool) {
	if n <= 0 {
		return Limit{}, false
	}
	return Limit{Rate: float64(n) / authThrottleWindow, Burst: n}, true
}

// authThrottled answers 429 RATE_LIMITED, with Retry-After, to a client
// address that has used up its failed authentications (DECISIONS.md section
// 10), before any key is looked at, and reports whether it did. It only
// peeks at the address's bucket: failures alone fill it (authFailed).
func (s *server) authThrottled(w http.ResponseWriter, r *http.Request, bucket string) bool {
	d := s.allowN(r.Context(), bucket, s.authLimit, 0)
	if d.Allowed {
		return false
	}
	if s.metrics != nil {
		s.metrics.AuthThrottled(r.Context())
	}
	s.fail(w, r, &problem.Error{
		Code:       problem.RateLimited,
		Detail:     "Too many requests with an invalid API key came from this address. Retry after the number of seconds in Retry-After.",
		RetryAfter: d.RetryAfter,
	})
	return true
}

// authFailed counts err against the client address when it is a 401
// INVALID_API_KEY (a key was presented and no such key exists), or a 401
// INVALID_ACCESS_TOKEN or ACCESS_TOKEN_EXPIRED (DECISIONS.md section 12).
func (s *server) authFailed(r *http.Request, bucket string, err error) {
	var pe *problem.Error
	if errors.As(err, &pe) && (pe.Code == problem.InvalidAPIKey ||
		pe.Code == problem.InvalidAccessToken || pe.Code == problem.AccessTokenExpired) {
		s.allowN(r.Context(), bucket, s.authLimit, 1)
	}
}

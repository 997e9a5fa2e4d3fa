package edge

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/oauth"
	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/problem"
)

// The edge's two limits, buckets of one ratelimit.Limiter: each API key's
// quota (rateLimit) and each client address's failed-auth throttle.

// policyName names the one quota policy of the RateLimit fields.
const policyName = `"default"`

// keyLimit is the quota of key: its own rateLimit, else the default.
func (s *server) keyLimit(k *keys.Key) (ratelimit.Limit, bool) {
	if rl := k.RateLimit; rl != nil {
		return *rl, rl.Valid()
	}
	return s.defaultLimit, s.hasDefault
}

// allowN asks the configured Limiter and, when it cannot decide (Redis
// down), the in-process one: a limiter's trouble never becomes a partner's
// error (Limiter's contract).
func (s *server) allowN(ctx context.Context, key ratelimit.Key, l ratelimit.Limit, n int) ratelimit.Decision {
	d, err := s.limiter.AllowN(ctx, key, l, n)
	if err != nil {
		d, _ = s.local.AllowN(ctx, key, l, n)
	}
	return d
}

// rateLimit counts every authenticated request against its key's quota
// (docs/contract.md section 10): every answer from here on carries
// RateLimit-Policy and RateLimit (docs/ratelimits.md), over the quota 429
// RATE_LIMITED with Retry-After equal to RateLimit's t. A key without a
// quota (its own or the default) gets neither.
func (s *server) rateLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := Key(r.Context())
		l, ok := s.keyLimit(key)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		d := s.allowN(r.Context(), ratelimit.Key{Kind: ratelimit.APIKey, ID: key.ID}, l, 1)
		policy := s.defaultPolicy
		if key.RateLimit != nil {
			policy = policyField(l)
		}
		hv := &[2]string{policy, limitField(d)} // one allocation for both values
		h := w.Header()
		h["Ratelimit-Policy"] = hv[0:1:1]
		h["Ratelimit"] = hv[1:2:2]
		if d.Allowed {
			next.ServeHTTP(w, r)
			return
		}
		s.fail(w, r, &problem.Error{
			Code:       problem.RateLimited,
			Detail:     "This API key has used its request quota. Retry after the number of seconds in Retry-After.",
			RetryAfter: d.RetryAfter,
		})
	})
}

// policyField is the RateLimit-Policy item of l: q is the burst, w the
// seconds an empty bucket takes to fill (at least 1). A client that sends
// q requests per w seconds, at once or spread, is never refused.
func policyField(l ratelimit.Limit) string {
	w := max(1, int64(math.Ceil(float64(l.Burst)/l.PerSecond)))
	return policyName + ";q=" + strconv.Itoa(l.Burst) + ";w=" + strconv.FormatInt(w, 10)
}

// limitField is the RateLimit item of d: r the whole requests left; t the
// seconds until the bucket is full again, or, with nothing left, until the
// next request is allowed (a 429's Retry-After). A client that sends no
// more than r requests in the next t seconds is never refused.
func limitField(d ratelimit.Decision) string {
	t := d.ResetAfter
	if d.Remaining < 1 {
		t = d.RetryAfter
	}
	var buf [48]byte
	b := append(buf[:0], policyName+";r="...)
	b = strconv.AppendInt(b, int64(max(d.Remaining, 0)), 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, int64(problem.RetryAfterSeconds(t)), 10)
	return string(b)
}

// authThrottleWindow is the window of EDGE_AUTH_FAIL_LIMIT: failures a minute.
const authThrottleWindow = 60

// authFailLimit is the bucket of the failed-authentication throttle: n
// failures at once, refilled at n a minute. n <= 0 disables the throttle.
func authFailLimit(n int) (ratelimit.Limit, bool) {
	if n <= 0 {
		return ratelimit.Limit{}, false
	}
	return ratelimit.Limit{PerSecond: float64(n) / authThrottleWindow, Burst: n}, true
}

// authThrottled answers 429 RATE_LIMITED to a client address that has used
// up its failed authentications (docs/contract.md section 10), and reports
// whether it did. It only peeks: failures alone fill the bucket (authFailed).
func (s *server) authThrottled(w http.ResponseWriter, r *http.Request, bucket ratelimit.Key) bool {
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
// INVALID_API_KEY, INVALID_ACCESS_TOKEN or ACCESS_TOKEN_EXPIRED, or a
// token's 503 for want of a key to verify it (docs/contract.md sections 12
// and 17): else tokens of made-up kids sent while the issuer is down would
// cost their sender nothing.
func (s *server) authFailed(r *http.Request, bucket ratelimit.Key, err error) {
	var pe *problem.Error
	var oe *oauth.Error
	if errors.As(err, &pe) && (pe.Code == problem.InvalidAPIKey ||
		pe.Code == problem.InvalidAccessToken || pe.Code == problem.AccessTokenExpired) ||
		errors.As(err, &oe) && oe.Kind == oauth.Unavailable {
		s.allowN(r.Context(), bucket, s.authLimit, 1)
	}
}

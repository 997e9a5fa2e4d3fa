package edge

import (
	"context"
	"math"
	"net/http"
	"strconv"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/problem"
)

// RateLimit is the deployment's default per-key token bucket
// (EDGE_RATE_LIMIT, EDGE_RATE_BURST). The zero value sets no default: then
// only keys with their own rateLimit in the key file are limited.
type RateLimit struct {
	// PerSecond is each key's sustained rate. Zero or less: no default.
	PerSecond float64
	// Burst is how many requests a key may make at once. Zero means
	// max(1, ceil(PerSecond)).
	Burst int
}

// limit is r as a Limiter's Limit; false when r sets no default.
func (r RateLimit) limit() (Limit, bool) {
	if r.PerSecond <= 0 {
		return Limit{}, false
	}
	if r.Burst <= 0 {
		r.Burst = max(1, int(math.Ceil(r.PerSecond)))
	}
	l := Limit{Rate: r.PerSecond, Burst: r.Burst}
	return l, l.Valid()
}

// policyName names the one quota policy of the RateLimit fields.
const policyName = `"default"`

// keyLimit is the quota of key: its own rateLimit, else the default.
func (s *server) keyLimit(k *keys.Key) (Limit, bool) {
	if rl := k.RateLimit; rl != nil {
		l := Limit{Rate: rl.PerSecond, Burst: rl.Burst}
		return l, l.Valid()
	}
	return s.defaultLimit, s.hasDefault
}

// allowN asks the configured Limiter and, when it cannot decide (Redis
// down), the in-process one: a limiter's trouble never becomes a partner's
// error (Limiter's contract).
func (s *server) allowN(ctx context.Context, key string, l Limit, n int) Decision {
	d, err := s.limiter.AllowN(ctx, key, l, n)
	if err != nil {
		d, _ = s.local.AllowN(ctx, key, l, n)
	}
	return d
}

// rateLimit counts every authenticated request against its key's quota
// (DECISIONS.md section 10). Every answer from here on, 200 or error, carries
// RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers-10,
// structured fields); over the quota the answer is 429 RATE_LIMITED with
// Retry-After equal to RateLimit's t. A key without a quota (no rateLimit
// of its own and no default) gets neither. The mapping of the bucket to the
// fields is in docs/ratelimits.md.
func (s *server) rateLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := Key(r.Context())
		l, ok := s.keyLimit(key)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		d := s.allowN(r.Context(), key.ID, l, 1) // key_...: never an "addr:" bucket
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
func policyField(l Limit) string {
	w := max(1, int64(math.Ceil(float64(l.Burst)/l.Rate)))
	return policyName + ";q=" + strconv.Itoa(l.Burst) + ";w=" + strconv.FormatInt(w, 10)
}

// limitField is the RateLimit item of d: r the whole requests left; t the
// seconds until the bucket is full again, or, with nothing left, until the
// next request is allowed (a 429's Retry-After). A client that sends no
// more than r requests in the next t seconds is never refused.
func limitField(d Decision) string {
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

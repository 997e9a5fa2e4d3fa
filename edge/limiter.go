package edge

import (
	"context"
	"math"
	"time"
)

// Limit is a token bucket, as GCRA sees it: Burst units at once, refilled at
// Rate units a second (one every 1/Rate s). It is the same shape as
// redis_rate.Limit (Rate per Period, Burst): Rate r/s is {Rate: 1, Burst: b,
// Period: time.Second / r}.
type Limit struct {
	Rate  float64 // units a second; > 0
	Burst int     // >= 1
}

// Valid reports whether l limits anything: a positive rate and burst, and a
// bucket that refills from empty within about 30 years (so its arithmetic
// in nanoseconds cannot overflow).
func (l Limit) Valid() bool {
	return l.Rate > 0 && l.Burst >= 1 && !math.IsInf(l.Rate, 0) &&
		float64(time.Second)/l.Rate*float64(l.Burst+1) < 1e18
}

// MinRate is the rate below which a Limit of burst cannot be Valid: its
// bucket would take more than 1e18 ns to refill. A configured rate at or
// below it must be refused, not taken as "no limit" (DECISIONS 15).
func MinRate(burst int) float64 {
	return float64(time.Second) * float64(burst+1) / 1e18
}

// Interval is the time one unit takes to refill.
func (l Limit) Interval() time.Duration {
	return time.Duration(math.Ceil(float64(time.Second) / l.Rate))
}

// Decision is what a Limiter reports for one call of AllowN.
type Decision struct {
	// Allowed: the n units were taken (n = 0: one unit would be allowed now).
	Allowed bool
	// Remaining is how many whole units the bucket holds after the call.
	Remaining int
	// RetryAfter is how long until one more unit (n units when the call
	// was refused) is allowed; 0 when Remaining >= 1.
	RetryAfter time.Duration
	// ResetAfter is how long until the bucket is full again.
	ResetAfter time.Duration
}

// Limiter keeps token buckets by name: the per-key quotas (named by the key
// id, key_...) and the failed-authentication throttle ("addr:" and the
// client address, or its /64 for IPv6) share one Limiter, each bucket with
// its own Limit; the two kinds of names cannot collide. A Limiter over a
// shared store should put its own prefix before them. The in-process LocalLimiter
// is the default; a fleet shares buckets through a Limiter over Redis (for
// example GCRA with github.com/go-redis/redis_rate/v10, whose AllowN has
// exactly these semantics, n = 0 included).
//
// AllowN takes n units from the bucket key under l, if the bucket holds
// them, and reports the bucket's state after the call. n = 0 takes nothing:
// it peeks, Allowed then reporting whether one unit would be allowed now.
// A bucket never touched is full. l may differ between calls for one key
// (a reloaded key file): the bucket's state carries over under the new l.
// AllowN must be safe for concurrent use and return quickly: it runs on the
// request path.
//
// An error means the Limiter could not decide (Redis slow or down, its
// circuit breaker open, ctx done); the Decision is then ignored. The edge
// never turns such an error into a partner's error: it decides that request
// with its own in-process LocalLimiter instead (limits then hold per
// process, not per fleet). A Limiter over Redis therefore needs no fallback
// of its own; it should bound each call with a short deadline, and may log
// and count its failures (once per transition, not per call).
type Limiter interface {
	AllowN(ctx context.Context, key string, l Limit, n int) (Decision, error)
}

package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// Limit is a GCRA quota: PerSecond sustained, Burst at once.
type Limit struct {
	PerSecond float64
	Burst     int
}

// Decision is a limiter's answer. RetryAfter is when the next request
// would be allowed (0 when allowed); ResetAfter is when the key is back to
// a full burst.
type Decision struct {
	Allowed    bool
	Remaining  int
	RetryAfter time.Duration
	ResetAfter time.Duration
}

// ErrBadLimit is a Limit that is not positive and finite.
var ErrBadLimit = errors.New("fleet: limit needs PerSecond > 0 and Burst >= 1")

// RedisLimiter is a fleet-wide GCRA limiter (redis_rate) behind the
// client's guard. Keys should come from RateKey or AuthFailKey.
type RedisLimiter struct {
	c   *Client
	lim *redis_rate.Limiter
}

// NewRedisLimiter returns a limiter on c.
func NewRedisLimiter(c *Client) *RedisLimiter {
	return &RedisLimiter{c: c, lim: redis_rate.NewLimiter(c.rdb)}
}

// AllowN consumes n requests of key's quota if it holds them (n = 0 takes
// nothing: Allowed then says whether one more request would be allowed),
// with the semantics of the edge's Limiter: RetryAfter is also set when a
// request was allowed but none is left (until the next one would be).
func (r *RedisLimiter) AllowN(ctx context.Context, key string, l Limit, n int) (Decision, error) {
	return r.allowN(ctx, key, l, max(n, 0))
}

func (r *RedisLimiter) allowN(ctx context.Context, key string, l Limit, n int) (Decision, error) {
	rl, err := toRate(l)
	if err != nil {
		return Decision{}, err
	}
	var res *redis_rate.Result
	err = r.c.Do(ctx, func(ctx context.Context, _ *redis.Client) (err error) {
		defer func() { // redis_rate asserts the reply's shape
			if p := recover(); p != nil {
				err = fmt.Errorf("fleet: unexpected rate-limit reply: %v", p)
			}
		}()
		res, err = r.lim.AllowN(ctx, key, rl, n)
		return err
	})
	if err != nil {
		return Decision{}, err
	}
	return decision(res, l, n), nil
}

// toRate turns PerSecond into one request per emission interval.
func toRate(l Limit) (redis_rate.Limit, error) {
	if !(l.PerSecond > 0) || math.IsInf(l.PerSecond, 0) || l.Burst < 1 {
		return redis_rate.Limit{}, ErrBadLimit
	}
	period := interval(l)
	if period < time.Microsecond {
		return redis_rate.Limit{}, ErrBadLimit
	}
	return redis_rate.Limit{Rate: 1, Period: period, Burst: l.Burst}, nil
}

// interval is the emission interval of l, rounded up to the nanosecond as
// the edge's in-process limiter rounds it (both then agree on headers).
func interval(l Limit) time.Duration {
	return time.Duration(math.Ceil(float64(time.Second) / l.PerSecond))
}

func decision(res *redis_rate.Result, l Limit, n int) Decision {
	d := Decision{Remaining: max(res.Remaining, 0), ResetAfter: max(res.ResetAfter, 0)}
	if n > 0 && res.Allowed <= 0 {
		d.RetryAfter = max(res.RetryAfter, 0)
		return d
	}
	// Allowed (or a peek): until one more is allowed, when none is left.
	d.Allowed = n > 0 || res.Remaining >= 1
	if d.Remaining < 1 {
		d.RetryAfter = max(d.ResetAfter-time.Duration(l.Burst-1)*interval(l), 0)
	}
	return d
}

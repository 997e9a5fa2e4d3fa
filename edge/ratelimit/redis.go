package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/upstream/fleet"
)

// ErrBadLimit is a Limit that is not positive and finite.
var ErrBadLimit = errors.New("ratelimit: limit needs PerSecond > 0 and Burst >= 1")

// Redis is the fleet-wide Limiter: GCRA (redis_rate) on the Redis of a
// fleet.Client, behind the client's guard (per-call deadline, circuit
// breaker), so every instance of a brand shares each bucket. Bucket names
// carry a prefix by kind and the brand (redisName). An error sends the edge
// to its in-process Local limiter (Limiter's contract); it is counted here
// as a fallback by use (the breaker logs the transitions).
type Redis struct {
	c     *fleet.Client
	brand string
	count fleet.Fallbacks // c, or a test's counter
}

// NewRedis returns the Limiter of brand's buckets on c.
func NewRedis(c *fleet.Client, brand string) *Redis {
	return &Redis{c: c, brand: brand, count: c}
}

// AllowN implements Limiter: it consumes n units of key's bucket if it
// holds them (n = 0 takes nothing: Allowed then says whether one more
// would be allowed), with Local's semantics: RetryAfter is also set when a
// request was allowed but none is left (until the next one would be). An
// invalid Limit allows everything, as Local does (the edge never asks).
func (r *Redis) AllowN(ctx context.Context, key Key, l Limit, n int) (Decision, error) {
	if !l.Valid() {
		return Decision{Allowed: true, Remaining: max(l.Burst, 0)}, nil
	}
	d, err := r.allowN(ctx, redisName(r.brand, key), l, max(n, 0))
	if err != nil {
		if ctx.Err() == nil {
			r.count.Fallback(ctx, use(key.Kind), err)
		}
		return Decision{}, err
	}
	return d, nil
}

func (r *Redis) allowN(ctx context.Context, name string, l Limit, n int) (Decision, error) {
	rl, err := toRate(l)
	if err != nil {
		return Decision{}, err
	}
	var res *redis_rate.Result
	err = r.c.Do(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
		defer func() { // redis_rate asserts the reply's shape
			if p := recover(); p != nil {
				err = fmt.Errorf("ratelimit: unexpected rate-limit reply: %v", p)
			}
		}()
		res, err = redis_rate.NewLimiter(rdb).AllowN(ctx, name, rl, n)
		return err
	})
	if err != nil {
		return Decision{}, err
	}
	return decision(res, l, n), nil
}

// redisName names a bucket in Redis (redis_rate stores it as "rate:" and
// the name): pe:rl:<brand>:<key id> for an API key's quota,
// pe:fa:<brand>:<address> for the failed-auth throttle; each part long or
// outside [A-Za-z0-9._-] is hashed (fleet.KeyPart).
func redisName(brand string, key Key) string {
	prefix := "pe:rl:"
	if key.Kind == Address {
		prefix = "pe:fa:"
	}
	return prefix + fleet.KeyPart(brand) + ":" + fleet.KeyPart(key.ID)
}

// use is the fleet's fallback counter's name of a kind of bucket.
func use(k Kind) fleet.Use {
	if k == Address {
		return fleet.UseAuthThrottle
	}
	return fleet.UseRateLimit
}

// toRate turns PerSecond into one request per emission interval.
func toRate(l Limit) (redis_rate.Limit, error) {
	if !(l.PerSecond > 0) || math.IsInf(l.PerSecond, 0) || l.Burst < 1 {
		return redis_rate.Limit{}, ErrBadLimit
	}
	period := l.Interval() // rounded up as Local rounds it: both agree on headers
	if period < time.Microsecond {
		return redis_rate.Limit{}, ErrBadLimit
	}
	return redis_rate.Limit{Rate: 1, Period: period, Burst: l.Burst}, nil
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
		d.RetryAfter = max(d.ResetAfter-time.Duration(l.Burst-1)*l.Interval(), 0)
	}
	return d
}

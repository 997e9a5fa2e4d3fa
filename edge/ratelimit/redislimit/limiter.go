// Package redislimit is the fleet-wide ratelimit.Limiter: every instance of
// a brand shares each bucket (an API key's quota, a client address's
// failed authentications) through one GCRA bucket in Redis, yet a
// rate-limited request makes no Redis round trip in the common case
// (docs/contract.md section 16): each instance answers from a lease of the
// bucket's units taken ahead of need and refilled in the background
// (docs/scaling.md, "Quotas off the request path", and its accuracy bound).
package redislimit

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
)

// The lease's timing (docs/scaling.md, "Quotas off the request path").
const (
	Refill = 100 * time.Millisecond // the background refill's interval
	Lease  = time.Second            // how long granted tokens stay spendable; a bucket unused as long is forgotten
	Batch  = 500                    // buckets one pipelined refill call carries
	stale  = 2 * Refill             // a look at a bucket older than this is not trusted

	// FullAddressKept is how long a client address whose bucket was full
	// at the last look is remembered without calls (its peeks cost none).
	FullAddressKept = 30 * time.Second
)

// Client is what the limiter needs of the fleet's Redis (redisconn.Client):
// calls through its guard (a short deadline, the circuit breaker) and a
// count of the answers given in-process instead.
type Client interface {
	Do(ctx context.Context, fn func(ctx context.Context, rdb redis.UniversalClient) error) error
	redisconn.Fallbacks
}

// Config configures a Limiter.
type Config struct {
	Client Client // the fleet's Redis; required
	Brand  string // prefixes every bucket name: brands sharing a Redis never share a bucket
	// Now is the clock. Nil means time.Now here and Redis's own clock
	// (TIME) inside the script, so the fleet's buckets run on one clock
	// whatever the instances' skew; set, the script is given this clock's
	// time (tests; a fleet whose clocks agree).
	Now func() time.Time
	// MaxEntries bounds the buckets remembered (zero: ratelimit.DefaultEntries);
	// past it, the tenth least recently used is forgotten (its tokens lost).
	MaxEntries int
}

// Limiter is the fleet-wide ratelimit.Limiter. It runs one background
// goroutine (the refill) until Close. Safe for concurrent use.
type Limiter struct {
	c          Client
	brand      string
	now        func() time.Time
	redisClock bool // the script reads Redis's TIME
	max        int

	mu      sync.RWMutex
	entries map[ratelimit.Key]*entry

	scratch    []keyed       // refillOnce's list of entries, reused (the loop's only)
	nextRefill atomic.Int64  // Unix ns of the next refill, for RetryAfter
	done       chan struct{} // closed when the refill has stopped
	close      func()        // stops the refill and waits for it, once
}

// entry is this instance's view of one bucket.
type entry struct {
	name string // the bucket's Redis key
	kind ratelimit.Kind

	mu      sync.Mutex
	lim     ratelimit.Limit // the last call's
	tokens  int             // units granted here and not spent
	expires int64           // Unix ns after which tokens are void
	seen    int64           // Unix ns of the last reply; 0: none
	left    int             // units the bucket held after that reply
	reset   time.Duration   // until it was full again, from seen
	takes   int             // units asked for (n >= 1) since the last refill
	peeks   int             // looks (n = 0) since the last refill
	rate    int             // takes in the last refill interval
	used    int64           // Unix ns of the last call
	call    *call           // the synchronous call in flight; nil: none
}

// call is a synchronous Redis call of one entry; done is closed when err
// is set.
type call struct {
	done chan struct{}
	err  error
}

// New returns a Limiter and starts its refill; Close stops it.
func New(cfg Config) *Limiter {
	l := &Limiter{c: cfg.Client, brand: cfg.Brand, now: cfg.Now, max: cfg.MaxEntries,
		entries: map[ratelimit.Key]*entry{}, done: make(chan struct{})}
	if l.now == nil {
		l.now, l.redisClock = time.Now, true
	}
	if l.max <= 0 {
		l.max = ratelimit.DefaultEntries
	}
	ctx, stop := context.WithCancel(context.Background())
	l.close = sync.OnceFunc(func() { stop(); <-l.done })
	l.nextRefill.Store(l.now().Add(Refill).UnixNano())
	go l.loop(ctx)
	return l
}

// Close stops the refill and waits for it. Tokens held are not returned:
// they are lost, as an instance that dies loses them.
func (l *Limiter) Close() { l.close() }

// Len is the number of buckets remembered.
func (l *Limiter) Len() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.entries)
}

// AllowN implements ratelimit.Limiter with the share of key's bucket this
// instance holds, asking Redis only as docs/scaling.md, "Quotas off the
// request path", tells (once at a time per bucket). An error (Redis
// unavailable) is counted as a fallback; the edge then decides in-process.
func (l *Limiter) AllowN(ctx context.Context, key ratelimit.Key, lim ratelimit.Limit, n int) (ratelimit.Decision, error) {
	if !lim.Valid() {
		return ratelimit.Decision{Allowed: true, Remaining: max(lim.Burst, 0)}, nil
	}
	n = max(n, 0)
	need := max(n, 1)
	e := l.entry(key)
	e.mu.Lock()
	if n > 0 {
		e.takes += n
	} else {
		e.peeks++
	}
	e.lim = lim
	asked := false
	for {
		now := l.now().UnixNano()
		e.used = now
		if e.tokens > 0 && now >= e.expires {
			e.tokens = 0
		}
		fresh := e.seen != 0 && now-e.seen < int64(stale)
		// A bucket full at the last look, however old, allows a peek: it
		// is an address with no failure seen, and a failure here goes to
		// Redis anyway (no tokens are taken ahead for a peek).
		full := e.seen != 0 && e.left >= lim.Burst
		allowed := e.tokens >= need || (n == 0 && (fresh || full) && e.left >= 1)
		if allowed || asked || (fresh && e.tokens+e.left < need) || need > lim.Burst {
			if allowed {
				e.tokens -= n
			}
			d := l.decision(e, now, allowed)
			e.mu.Unlock()
			return d, nil
		}
		if c := e.call; c != nil { // another request is asking: its answer serves this one
			e.mu.Unlock()
			select {
			case <-c.done:
			case <-ctx.Done():
				return ratelimit.Decision{}, ctx.Err()
			}
			if c.err != nil {
				return l.fallback(ctx, key, c.err)
			}
			// Its units may all have gone to other waiters: look again
			// (and ask again while the bucket, as now seen, has some).
			e.mu.Lock()
			continue
		}
		// A peek only looks. A quota takes some units ahead of need (what
		// was asked for here in a refill interval); the failed-auth
		// throttle none, so that an address's budget is never held by an
		// instance it does not fail at.
		want := 0
		switch {
		case n > 0 && key.Kind == ratelimit.APIKey:
			want = min(n-e.tokens+max(e.rate, e.takes), lim.Burst)
		case n > 0:
			want = n - e.tokens
		}
		c := &call{done: make(chan struct{})}
		e.call = c
		e.mu.Unlock()
		at := l.now()
		r, err := l.take(ctx, ask{name: e.name, lim: lim, want: want}, at)
		e.mu.Lock()
		e.call = nil
		c.err = err
		close(c.done)
		if err != nil {
			e.mu.Unlock()
			return l.fallback(ctx, key, err)
		}
		e.apply(r, at.UnixNano())
		asked = true
	}
}

// fallback counts a fallback for key's Redis error err (none when the
// caller has gone) and returns err: the edge decides in-process.
func (l *Limiter) fallback(ctx context.Context, key ratelimit.Key, err error) (ratelimit.Decision, error) {
	if use := redisconn.UseRateLimit; ctx.Err() == nil {
		if key.Kind == ratelimit.Address {
			use = redisconn.UseAuthThrottle
		}
		l.c.Fallback(ctx, use, err)
	}
	return ratelimit.Decision{}, err
}

// decision is what e tells at now: allowed or not, with the RateLimit
// fields of this instance.
func (l *Limiter) decision(e *entry, now int64, allowed bool) ratelimit.Decision {
	d := ratelimit.Decision{Allowed: allowed, Remaining: max(e.tokens+e.left, 0),
		ResetAfter: time.Duration(max(e.seen+int64(e.reset)-now, 0))}
	if !allowed || d.Remaining < 1 {
		d.RetryAfter = l.retryAfter(e, now)
	}
	return d
}

// retryAfter is how long until this instance may allow one more unit of
// e: the first refill at or after the bucket (as last seen) holds one.
func (l *Limiter) retryAfter(e *entry, now int64) time.Duration {
	unit := e.seen + int64(e.reset) - int64(e.lim.Burst-1)*int64(e.lim.Interval())
	at, step := l.nextRefill.Load(), int64(Refill)
	if at < now {
		at = now + step
	}
	if unit > at {
		at += (unit - at + step - 1) / step * step
	}
	return time.Duration(at - now)
}

// apply records a reply of Redis sent at at.
func (e *entry) apply(r reply, at int64) {
	if r.got > 0 {
		e.tokens += r.got
		e.expires = at + int64(Lease)
	}
	if at >= e.seen {
		e.seen, e.left, e.reset = at, r.left, r.reset
	}
}

// take asks Redis for a.want units of one bucket, through the guard.
func (l *Limiter) take(ctx context.Context, a ask, at time.Time) (reply, error) {
	if l.redisClock {
		at = time.Time{}
	}
	var r reply
	err := l.c.Do(ctx, func(ctx context.Context, rdb redis.UniversalClient) error {
		rs, err := run(ctx, rdb, []ask{a}, at)
		if err == nil {
			r = rs[0]
		}
		return err
	})
	return r, err
}

// entry returns key's entry, made when new (forgetting the least recently
// used tenth when MaxEntries are held).
func (l *Limiter) entry(key ratelimit.Key) *entry {
	l.mu.RLock()
	e := l.entries[key]
	l.mu.RUnlock()
	if e != nil {
		return e
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e = l.entries[key]; e != nil {
		return e
	}
	if len(l.entries) >= l.max {
		l.evict()
	}
	e = &entry{name: redisName(l.brand, key), kind: key.Kind}
	l.entries[key] = e
	return e
}

// evict forgets the tenth (at least one) of the entries least recently
// used; l.mu is held.
func (l *Limiter) evict() {
	type aged struct {
		key  ratelimit.Key
		used int64
	}
	all := make([]aged, 0, len(l.entries))
	for k, e := range l.entries {
		e.mu.Lock()
		all = append(all, aged{k, e.used})
		e.mu.Unlock()
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Compare(a.used, b.used) })
	for _, a := range all[:max(1, min(len(all), l.max/10))] {
		delete(l.entries, a.key)
	}
}

// keyed is an entry and its key, listed by refillOnce.
type keyed struct {
	k ratelimit.Key
	e *entry
}

// idle reports whether e, unused since the last refill, may be forgotten
// at now: unused for a lease (an address full at its last look: for
// FullAddressKept), no call in flight, no tokens held. e.mu is held.
func (l *Limiter) idle(e *entry, now int64) bool {
	keep := Lease
	if e.kind == ratelimit.Address && e.seen != 0 && e.left >= e.lim.Burst {
		// An address with no failure seen: its full look is what lets
		// its peeks go without a call (AllowN), kept longer.
		keep = max(keep, FullAddressKept)
	}
	return now-e.used >= int64(keep) && e.call == nil && e.tokens == 0
}

// loop refills every Refill until ctx ends.
func (l *Limiter) loop(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(Refill)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		l.nextRefill.Store(l.now().Add(Refill).UnixNano())
		l.refillOnce(ctx)
	}
}

// refillOnce tops up, looks at and forgets buckets as docs/scaling.md,
// "Quotas off the request path", tells, in one pipelined call per Batch
// buckets; a failure leaves them to the request path (and its fallback).
func (l *Limiter) refillOnce(ctx context.Context) {
	at := l.now()
	now := at.UnixNano()
	var asks []ask
	var es []*entry
	// The entries are listed under the read lock and visited without it:
	// the request path never waits for a pass over every bucket.
	l.mu.RLock()
	all := l.scratch[:0]
	for k, e := range l.entries {
		all = append(all, keyed{k, e})
	}
	l.mu.RUnlock()
	var idle []keyed
	for _, ke := range all {
		e := ke.e
		e.mu.Lock()
		takes, peeks := e.takes, e.peeks
		e.rate, e.takes, e.peeks = takes, 0, 0
		if e.tokens > 0 && now >= e.expires {
			e.tokens = 0
		}
		want := min(max(2*takes-e.tokens, 0), e.lim.Burst)
		look := e.kind == ratelimit.Address || takes == 0 // never ahead of need for an address (AllowN)
		switch {
		case takes == 0 && peeks == 0:
			if l.idle(e, now) {
				idle = append(idle, ke)
			}
		case look && e.seen != 0 && e.left >= e.lim.Burst:
			// Full at the last look: a peek needs nothing refreshed, and a
			// failure goes to Redis anyway (AllowN).
		case look:
			asks = append(asks, ask{name: e.name, lim: e.lim})
			es = append(es, e)
		case e.tokens >= takes:
			// Holds as much as was asked for in the last interval: enough
			// for the next (should it run dry, the request path asks).
			// A key used now and then costs no refill after each call.
		case want > 0:
			asks = append(asks, ask{name: e.name, lim: e.lim, want: want})
			es = append(es, e)
		}
		e.mu.Unlock()
	}
	clear(all)
	l.scratch = all[:0]
	if len(idle) > 0 {
		l.mu.Lock()
		for _, ke := range idle {
			ke.e.mu.Lock()
			if l.entries[ke.k] == ke.e && ke.e.takes+ke.e.peeks == 0 && l.idle(ke.e, now) {
				delete(l.entries, ke.k)
			}
			ke.e.mu.Unlock()
		}
		l.mu.Unlock()
	}
	if l.redisClock {
		at = time.Time{}
	}
	for i := 0; i < len(asks); i += Batch {
		j := min(i+Batch, len(asks))
		var replies []reply
		err := l.c.Do(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
			replies, err = run(ctx, rdb, asks[i:j], at)
			return err
		})
		if err != nil {
			return
		}
		for k, r := range replies {
			if r.ok {
				e := es[i+k]
				e.mu.Lock()
				e.apply(r, now)
				e.mu.Unlock()
			}
		}
	}
}

// redisName names a bucket in Redis, each part through redisconn.KeyPart.
// (Before the lease, redis_rate kept its buckets under rate:pe:rl: and
// rate:pe:fa:, in another format: new names keep a rolling upgrade from
// reading one as the other.)
func redisName(brand string, key ratelimit.Key) string {
	prefix := "pe:quota:"
	if key.Kind == ratelimit.Address {
		prefix = "pe:authfail:"
	}
	return prefix + redisconn.KeyPart(brand) + ":" + redisconn.KeyPart(key.ID)
}

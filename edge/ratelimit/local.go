package ratelimit

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	gocache "github.com/patrickmn/go-cache"
)

// DefaultEntries bounds a Local made with max <= 0.
const DefaultEntries = 100_000

// idleGrace is how long a bucket stays stored after it is full again (an
// absent bucket is full): go-cache expires on the wall clock while Local
// decides on its injected clock, and the grace keeps the two from
// disagreeing early (a fake clock, a slow machine). Correctness never
// rests on the expiry: a stored bucket whose time has passed is full.
const idleGrace = time.Minute

// sweepEvery is how often (on the injected clock) a call removes the
// expired buckets, so idle entries leave without a sweeping goroutine.
const sweepEvery = time.Second

// Local is the in-process Limiter: GCRA (the generic cell rate
// algorithm, as redis_rate computes it) over an injected clock. A bucket's
// whole state is its theoretical arrival time (TAT); a bucket whose TAT has
// passed is full, which is what an absent bucket means too, so such entries
// are dropped without losing anything. Its buckets live in go-cache
// without a janitor (swept by calls) and are capped per Kind, the tenth
// that would be full soonest evicted past the cap (an evicted client
// starts full: the throttle fails open for it, never shut for anyone
// else); docs/ratelimits.md, "State and bounds; the Redis seam".
type Local struct {
	now func() time.Time
	max int

	mu        sync.Mutex
	buckets   [Address + 1]*gocache.Cache // by Kind; index 0 unused
	seq       uint64                      // order of the last store, for eviction among equals
	lastSweep int64                       // Unix ns of the last sweep, injected clock
}

// bucket is one bucket's state, stored by pointer and updated in place
// under Local.mu.
type bucket struct {
	tat int64  // theoretical arrival time, Unix nanoseconds
	seq uint64 // Local.seq when last stored
}

// NewLocal returns a Local holding at most max buckets of each Kind
// (DefaultEntries when max <= 0). now nil means time.Now.
func NewLocal(now func() time.Time, max int) *Local {
	if now == nil {
		now = time.Now
	}
	if max <= 0 {
		max = DefaultEntries
	}
	l := &Local{now: now, max: max}
	for k := range l.buckets {
		// No default expiry, no janitor goroutine (cleanup interval 0).
		l.buckets[k] = gocache.New(gocache.NoExpiration, 0)
	}
	return l
}

// Len returns the number of buckets held (expired ones not yet swept
// included).
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.buckets {
		n += c.ItemCount()
	}
	return n
}

// AllowN implements Limiter; it never returns an error. An invalid Limit
// (zero rate or burst) allows everything.
func (l *Local) AllowN(_ context.Context, key Key, lim Limit, n int) (Decision, error) {
	if !lim.Valid() {
		return Decision{Allowed: true, Remaining: max(lim.Burst, 0)}, nil
	}
	n = max(n, 0)
	c := l.buckets[APIKey]
	if key.Kind == Address {
		c = l.buckets[Address]
	}
	now := l.now().UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now-l.lastSweep >= int64(sweepEvery) || now < l.lastSweep {
		l.sweep(now)
	}
	var b *bucket
	if v, ok := c.Get(key.ID); ok {
		b = v.(*bucket)
	}
	tat := now
	if b != nil {
		tat = max(b.tat, now)
	}
	d, newTAT := gcra(now, tat, lim, n)
	if n > 0 && d.Allowed {
		l.store(c, key.ID, b, now, newTAT)
	}
	return d, nil
}

// gcra decides n units at now for a bucket at tat (>= now) and returns the
// decision and the bucket's TAT should the units be taken.
func gcra(now, tat int64, lim Limit, n int) (Decision, int64) {
	interval := int64(lim.Interval())
	offset := interval * int64(lim.Burst) // a full bucket
	cost := int64(max(n, 1))              // a peek decides one unit
	newTAT := tat + cost*interval
	diff := now - (newTAT - offset) // >= 0: allowed; diff/interval units spare
	if diff < 0 {
		remaining := (now - (tat - offset)) / interval
		return Decision{Remaining: int(max(remaining, 0)), RetryAfter: time.Duration(-diff),
			ResetAfter: time.Duration(tat - now)}, tat
	}
	d := Decision{Allowed: true, Remaining: int(diff / interval), ResetAfter: time.Duration(newTAT - now)}
	if n == 0 { // nothing taken: the bucket is as it was
		d.Remaining, d.ResetAfter = int((diff+interval)/interval), time.Duration(tat-now)
		newTAT = tat
	}
	if d.Remaining < 1 {
		d.RetryAfter = time.Duration(interval - diff%interval)
		if n == 0 {
			d.RetryAfter = 0 // one unit is allowed now
		}
	}
	return d, newTAT
}

// store records tat as key's bucket in c, for idleGrace past tat.
func (l *Local) store(c *gocache.Cache, id string, b *bucket, now, tat int64) {
	l.seq++
	if b == nil {
		if c.ItemCount() >= l.max {
			l.sweep(now)
			if c.ItemCount() >= l.max {
				l.evict(c)
			}
		}
		b = &bucket{}
	}
	b.tat, b.seq = tat, l.seq
	c.Set(id, b, time.Duration(tat-now)+idleGrace)
}

// sweep removes expired buckets of every kind.
func (l *Local) sweep(now int64) {
	l.lastSweep = now
	for _, c := range l.buckets {
		c.DeleteExpired()
	}
}

// evict removes the tenth (at least one) of c's buckets that would be full
// soonest, the least recently stored first among equals.
func (l *Local) evict(c *gocache.Cache) {
	type entry struct {
		id string
		b  *bucket
	}
	items := c.Items()
	all := make([]entry, 0, len(items))
	for id, it := range items {
		all = append(all, entry{id, it.Object.(*bucket)})
	}
	slices.SortFunc(all, func(x, y entry) int { return cmp.Or(cmp.Compare(x.b.tat, y.b.tat), cmp.Compare(x.b.seq, y.b.seq)) })
	for _, e := range all[:max(1, min(len(all), l.max/10))] {
		c.Delete(e.id)
	}
}

package ratelimit

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// DefaultEntries bounds a Local made with max <= 0.
const DefaultEntries = 100_000

// Local is the in-process Limiter: GCRA (the generic cell rate
// algorithm, as redis_rate computes it) over an injected clock. A bucket's
// whole state is its theoretical arrival time (TAT); a bucket whose TAT has
// passed is full, which is what an absent bucket means too, so such entries
// are dropped without losing anything.
//
// Memory is bounded: at most max buckets, least recently used first out
// when a new one would pass the cap (that bucket's client then starts
// full again: the throttle fails open for it, never shut for anyone
// else). Every call also drops up to two idle (full) buckets from the
// least recently used end, so idle entries (a key dropped by a reload, an
// address gone quiet) leave without a sweeping goroutine. A peek (n = 0)
// never creates an entry.
type Local struct {
	now func() time.Time
	max int

	mu  sync.Mutex
	m   map[Key]*list.Element // of *bucket
	lru list.List             // front: most recently used
}

type bucket struct {
	key Key
	tat int64 // Unix nanoseconds
}

// NewLocal returns a Local holding at most max buckets
// (DefaultEntries when max <= 0). now nil means time.Now.
func NewLocal(now func() time.Time, max int) *Local {
	if now == nil {
		now = time.Now
	}
	if max <= 0 {
		max = DefaultEntries
	}
	return &Local{now: now, max: max, m: make(map[Key]*list.Element)}
}

// Len returns the number of buckets held.
func (l *Local) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.m)
}

// AllowN implements Limiter; it never returns an error. An invalid Limit
// (zero rate or burst) allows everything.
func (l *Local) AllowN(_ context.Context, key Key, lim Limit, n int) (Decision, error) {
	if !lim.Valid() {
		return Decision{Allowed: true, Remaining: max(lim.Burst, 0)}, nil
	}
	n = max(n, 0)
	now := l.now().UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropIdle(now, 2)
	el := l.m[key]
	tat := now
	if el != nil {
		tat = max(el.Value.(*bucket).tat, now)
	}
	d, newTAT := gcra(now, tat, lim, n)
	if n > 0 && d.Allowed {
		l.store(key, el, newTAT)
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

func (l *Local) store(key Key, el *list.Element, tat int64) {
	if el != nil {
		el.Value.(*bucket).tat = tat
		l.lru.MoveToFront(el)
		return
	}
	if len(l.m) >= l.max {
		oldest := l.lru.Back()
		l.lru.Remove(oldest)
		delete(l.m, oldest.Value.(*bucket).key)
	}
	l.m[key] = l.lru.PushFront(&bucket{key: key, tat: tat})
}

// dropIdle removes up to k full buckets from the least recently used end.
func (l *Local) dropIdle(now int64, k int) {
	for ; k > 0; k-- {
		el := l.lru.Back()
		if el == nil || el.Value.(*bucket).tat > now {
			return
		}
		l.lru.Remove(el)
		delete(l.m, el.Value.(*bucket).key)
	}
}

// Package retrybudget bounds the retries of the PMS client (upstream's
// retries): over a sliding window they stay under a share of requests, plus
// a small floor per second (Finagle's retry budget).
package retrybudget

import (
	"cmp"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of Config.
const (
	DefaultRatio        = 0.2
	DefaultMinPerSecond = 10
)

// The sliding window over which requests and retries are counted, in
// buckets.
const (
	window        = 10 * time.Second
	budgetBuckets = 10
	bucket        = window / budgetBuckets
)

// Config configures a Budget.
type Config struct {
	// Ratio is the share of recent requests that may be retried: a retry
	// is allowed while retries+1 <= Ratio*requests over the window. Zero
	// means DefaultRatio (0.2); negative means none beyond the floor.
	Ratio float64
	// MinPerSecond is the floor: this many retries per second (with a
	// burst of as many) are allowed whatever the ratio, so that a quiet
	// client can still retry a blip. Zero means DefaultMinPerSecond
	// (10); negative means no floor.
	MinPerSecond int
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
}

// Budget bounds the retries of all calls sharing it, so that retries
// cannot multiply the load on a failing PMS (Finagle's retry budget): over
// a sliding window, retries stay under a share of requests, plus a small
// floor per second. Once the budget is spent, a failed attempt is returned
// without retrying. Safe for concurrent use.
type Budget struct {
	ratio float64
	floor *rate.Limiter // nil: no floor
	now   func() time.Time

	mu                sync.Mutex
	cur               int64 // index of the current bucket: unix time / bucket
	ring              [budgetBuckets]struct{ requests, retries int64 }
	requests, retries int64 // sums over the ring
}

// New returns a budget configured by cfg.
func New(cfg Config) *Budget {
	cfg.Ratio = cmp.Or(cfg.Ratio, DefaultRatio)
	cfg.MinPerSecond = cmp.Or(cfg.MinPerSecond, DefaultMinPerSecond)
	b := &Budget{ratio: max(cfg.Ratio, 0), now: cfg.Now}
	if b.now == nil {
		b.now = time.Now
	}
	if cfg.MinPerSecond > 0 {
		b.floor = rate.NewLimiter(rate.Limit(cfg.MinPerSecond), cfg.MinPerSecond)
	}
	b.cur = b.now().UnixNano() / int64(bucket)
	return b
}

// advance drops the buckets that left the window. b.mu is held.
func (b *Budget) advance(now time.Time) {
	idx := now.UnixNano() / int64(bucket)
	if idx <= b.cur {
		return
	}
	for i := b.cur + 1; i <= idx && i <= b.cur+budgetBuckets; i++ {
		slot := &b.ring[i%budgetBuckets]
		b.requests -= slot.requests
		b.retries -= slot.retries
		slot.requests, slot.retries = 0, 0
	}
	b.cur = idx
}

// Request records one request (a first attempt).
func (b *Budget) Request() {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	b.ring[b.cur%budgetBuckets].requests++
	b.requests++
}

// TryRetry reports whether one retry may be made now, and if so counts it.
func (b *Budget) TryRetry() bool {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	if float64(b.retries+1) > b.ratio*float64(b.requests) &&
		(b.floor == nil || !b.floor.AllowN(now, 1)) {
		return false
	}
	b.ring[b.cur%budgetBuckets].retries++
	b.retries++
	return true
}

package observability

import (
	"sync"
	"time"
)

// keepBudget is the token bucket of Config.KeepRate (EDGE_TRACE_KEEP_RATE):
// rate tokens a second, at most rate held (a burst of rate traces), one
// token per trace kept for its outcome. So in any span of s seconds at
// most rate*(s+1) traces are kept by outcome: a storm of 5xx answers
// exports a sample spread over the storm, not every one of them
// (docs/contract.md section 22). Errors come first: a slow request (or a
// leader's claim, LeadLoad) takes a token only while more than forErrors
// are left, half the burst, which stays for errors. A walk (KeepWalk)
// takes at the rank of an error: one token, and one more for the request
// it keeps.
type keepBudget struct {
	rate      float64
	forErrors float64
	now       func() time.Time

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// newKeepBudget is the bucket of rate traces a second, full; nil when rate
// is 0 (no bound).
func newKeepBudget(rate int, now func() time.Time) *keepBudget {
	if rate <= 0 {
		return nil
	}
	r := float64(rate)
	return &keepBudget{rate: r, forErrors: float64(rate / 2), now: now, tokens: r, last: now()}
}

// take takes one token if more than floor are left.
func (b *keepBudget) take(floor float64) bool { return b.takeN(1, floor) }

// takeN takes n tokens if at least floor+n are left.
func (b *keepBudget) takeN(n, floor float64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(b.rate, b.tokens+d.Seconds()*b.rate)
		b.last = now
	}
	if b.tokens < floor+n {
		return false
	}
	b.tokens -= n
	return true
}

// give puts a token back (a claim nobody needed).
func (b *keepBudget) give() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens = min(b.rate, b.tokens+1)
}

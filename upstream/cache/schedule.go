package cache

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// Walks on the clock (docs/contract.md section 24; docs/resilience.md,
// "Walks follow the clock"): once Schedule is called, the cache walks the
// PMS every TTL after the previous walk ended (with TTL 0, every
// WalkEvery, for the events feed alone), whether or not partners call,
// and no request starts a walk. A failed walk is walked again after a
// back-off, from RefreshBackoff doubling up to the period (at least the
// PMS's Retry-After), never back to back. A request that needs a snapshot
// none holds waits for the walk at most SnapshotWait (await), then gets
// 503 with the walk's expected remaining time.

// schedule is the state of the walks on the clock.
type schedule struct {
	on atomic.Bool // Schedule was called: no request starts a walk

	mu      sync.Mutex
	ended   chan struct{} // closed when the walk under way ends, then replaced
	running bool          // a walk is under way
	err     error         // the last walk's failure; nil after a success, or before any walk ended
	next    time.Time     // Config.Now when the next walk starts; zero: none planned
	walked  bool          // a walk on the clock has succeeded
}

// view is what a waiting request reads of the schedule, at one moment.
type view struct {
	ended   <-chan struct{}
	running bool
	err     error
	next    time.Time
	walked  bool
}

func (s *schedule) view() view {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended == nil {
		s.ended = make(chan struct{})
	}
	return view{ended: s.ended, running: s.running, err: s.err, next: s.next, walked: s.walked}
}

// start marks a walk under way.
func (s *schedule) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running, s.next = true, time.Time{}
}

// finish marks the walk under way ended with err (nil: it succeeded), the
// next one planned at next, and wakes those who waited for it.
func (s *schedule) finish(err error, next time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running, s.err, s.next = false, err, next
	s.walked = s.walked || err == nil
	if s.ended != nil {
		close(s.ended)
	}
	s.ended = make(chan struct{})
}

// Schedule starts the walks on the clock: the first now, in the
// background (no partner waits for it: docs/contract.md section 22), the
// next one TTL after each walk ended (with TTL 0, every WalkEvery: they
// feed the events while each read walks for itself), and after a failure
// once its back-off has passed. From now on no request starts a walk:
// one that needs a snapshot none holds waits for the walk under way
// (SnapshotWait). Each walk sends a request id of its own (req_...) with
// every PMS request and names it on its log line. No walk starts once ctx
// has ended; one under way then goes on (a draining edge may still serve
// requests waiting for it) until it ends or the Cache is closed, and
// Close waits for it. Call it once (later calls do nothing).
func (c *Cache) Schedule(ctx context.Context) {
	if !c.sched.on.CompareAndSwap(false, true) || !c.track() {
		return
	}
	go c.onTheClock(ctx)
}

// onTheClock is Schedule's goroutine.
func (c *Cache) onTheClock(ctx context.Context) {
	defer c.wg.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(c.base, cancel)() // Close stops it too
	failures := 0
	for {
		s, err := c.walkOnTheClock(ctx)
		wait := c.nextWalk(s, err, &failures)
		c.sched.finish(err, c.cfg.Now().Add(wait))
		if ctx.Err() != nil {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// walkOnTheClock walks the PMS once (loadAndStore), under ctx and the
// walk's budget, with a request id of its own. It is the snapshot's one
// shared load (group): with TTL 0, where each read loads for itself, a
// read's walk and this one are never two at once (the memory of one
// walk: docs/contract.md section 17); whichever comes second joins the
// first.
func (c *Cache) walkOnTheClock(ctx context.Context) (*upstream.Snapshot, error) {
	kind := WalkRefresh
	if !c.sched.view().walked {
		kind = WalkFirstLoad
	}
	ctx = upstream.WithCallerIDs(ctx, upstream.CallerIDs{RequestID: newWalkID()})
	c.sched.start()
	// Under base, not ctx: a walk under way when the server's context
	// ends (a SIGTERM) goes on while the edge drains (requests may be
	// waiting for it, or with TTL 0 sharing it); Close ends it.
	v, err, _ := c.group.Do(snapKey, func() (any, error) {
		return c.run(ctx, c.loadAndStore, kind, c.cfg.WalkTimeout)
	})
	if l, ok := v.(*ledLoad); ok { // joined a read's own load (TTL 0)
		v = l.v
	}
	if err != nil {
		return nil, err
	}
	s, _ := v.(*upstream.Snapshot)
	return s, nil
}

// period is the time between the end of a walk on the clock and the start
// of the next: the TTL, or WalkEvery with TTL 0.
func (c *Cache) period() time.Duration {
	if c.disabled {
		return c.cfg.WalkEvery
	}
	return c.cfg.TTL
}

// nextWalk is the wait before the walk after one that returned s or
// failed with err (failures: failed walks in a row, kept here). After a
// success: the period, less the snapshot's age when it was walked
// earlier (a fleet member took another's publication, so that the fleet
// walks once per period), but never less than RefreshBackoff (or the
// period, if shorter). After a failure: RefreshBackoff doubled per
// failure in a row, up to the period, at least the PMS's Retry-After.
func (c *Cache) nextWalk(s *upstream.Snapshot, err error, failures *int) time.Duration {
	period := c.period()
	if err == nil {
		*failures = 0
		wait := period
		if s != nil && !s.LoadedAt.IsZero() {
			if age := c.cfg.Now().Sub(s.LoadedAt); age > 0 && age < period {
				wait = max(period-age, min(period, c.cfg.RefreshBackoff))
			}
		}
		return wait
	}
	*failures++
	limit := max(period, c.cfg.RefreshBackoff)
	wait := c.cfg.RefreshBackoff
	for i := 1; i < *failures && wait < limit; i++ {
		wait *= 2
	}
	wait = min(wait, limit)
	var ue *upstream.Error
	if errors.As(err, &ue) && ue.Kind == upstream.Unavailable {
		wait = max(wait, ue.RetryAfter) // the PMS asked for longer
	}
	return wait
}

// fromSchedule is snapshot while walks follow the clock: the held
// snapshot while younger than Stale (past TTL after a failed walk, as
// stale data), else the wait for a walk (await). No request starts a
// walk.
func (c *Cache) fromSchedule(ctx context.Context) (*upstream.Snapshot, error, error) {
	e, now := c.cur.Load(), c.cfg.Now()
	if e != nil && now.Sub(e.loadedAt) < c.cfg.Stale {
		if now.Sub(e.loadedAt) >= c.cfg.TTL && c.failing() {
			c.outcome(ctx, OutcomeStale)
			return e.val, errBackoff, nil
		}
		c.outcome(ctx, OutcomeHit)
		return e.val, nil, nil
	}
	s, err := c.await(ctx, false)
	c.linkFollower(ctx)
	if err == nil || ctx.Err() == nil {
		c.outcome(ctx, OutcomeCoalesced)
	}
	return s, nil, err
}

// Await returns once the walks on the clock have made a snapshot (one
// walk succeeded), without ever starting a walk; until then it waits as
// a request without a snapshot does (await) and returns its error. The
// events feed asks it rather than Snapshot: reading the feed never
// reaches the PMS (docs/contract.md section 24). Without Schedule it
// returns nil at once.
func (c *Cache) Await(ctx context.Context) error {
	if !c.sched.on.Load() {
		return nil
	}
	_, err := c.await(ctx, true)
	return err
}

// await waits for a walk on the clock to make what a request needs: a
// snapshot younger than Stale, or (forFeed) any walk that succeeded. It
// waits at most SnapshotWait, or until ctx's deadline if sooner, and then
// answers upstream.Unavailable with the walk's expected remaining time
// (docs/contract.md section 24); when the last walk failed and none is
// under way, it answers that failure at once (walkFailed).
func (c *Cache) await(ctx context.Context, forFeed bool) (*upstream.Snapshot, error) {
	var limit *time.Timer
	for {
		// The schedule first, then the snapshot: a walk that ends between
		// the two has closed v.ended, and the loop looks again.
		v := c.sched.view()
		if forFeed && v.walked {
			return nil, nil
		}
		if e := c.cur.Load(); !forFeed && e != nil && c.cfg.Now().Sub(e.loadedAt) < c.cfg.Stale {
			return e.val, nil
		}
		if !v.running && v.err != nil {
			return nil, c.walkFailed(v.err, v.next)
		}
		if limit == nil {
			limit = time.NewTimer(c.cfg.SnapshotWait)
			defer limit.Stop()
		}
		select {
		case <-v.ended:
		case <-limit.C:
			return nil, c.stillWalking()
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, c.stillWalking()
			}
			return nil, upstream.Classify(ctx, ctx.Err(), upstream.Internal)
		}
	}
}

// stillWalking is the answer of a request that waited for the walk under
// way as long as it may: 503, with what is left of the walk as its
// Retry-After.
func (c *Cache) stillWalking() error {
	return &upstream.Error{Kind: upstream.Unavailable, RetryAfter: c.walks.retryAfter(c.cfg.Now(), c.cfg.LastWalk), Err: errWalking}
}

// walkFailed is the answer of a request without a snapshot after the walk
// on the clock failed with err, the next one planned at next. A walk that
// failed on time (a stalled or slow PMS, the walk's budget) or was held
// back (the breaker, the PMS's Retry-After) is no answer the PMS gave:
// 503 with a Retry-After of the wait for the next walk and its expected
// length (never 504: docs/contract.md section 24). One the PMS answered
// badly (too large, malformed) keeps its kind (502), as does a fault of
// the edge.
func (c *Cache) walkFailed(err error, next time.Time) error {
	ue := *upstream.Classify(context.Background(), err, upstream.Internal) // each caller owns its error
	switch ue.Kind {
	case upstream.Timeout, upstream.Unavailable, upstream.Canceled:
		exp := c.walks.expected(c.cfg.LastWalk)
		if exp == 0 {
			exp = time.Duration(c.walks.failed.Load()) // as long as the failed one, at least
		}
		ra := exp
		if !next.IsZero() {
			ra += max(next.Sub(c.cfg.Now()), 0)
		}
		return &upstream.Error{Kind: upstream.Unavailable, RetryAfter: clampRetryAfter(max(ra, ue.RetryAfter)), Err: err}
	}
	return &ue
}

// LastWalk is the length of this process's last successful walk, 0
// before one: what a later start may offer as Config.LastWalk (kept on
// disk, or in the fleet), so that its first walk's Retry-After counts from
// it.
func (c *Cache) LastWalk() time.Duration { return time.Duration(c.walks.last.Load()) }

// idAlphabet is the request id's alphabet (the edge's own, edge/base.go).
const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// newWalkID is the request id of a walk no request started: req_ and 24
// characters of [A-Za-z0-9], the form of the edge's own request ids
// (docs/contract.md section 24), sent as X-Request-Id on each of its PMS
// requests.
func newWalkID() string {
	b := make([]byte, 0, 4+24)
	b = append(b, "req_"...)
	for range 24 {
		b = append(b, idAlphabet[rand.IntN(len(idAlphabet))])
	}
	return string(b)
}

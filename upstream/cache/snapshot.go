package cache

import (
	"context"
	"errors"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// Snapshot returns the brand's properties (see the package doc). A caller
// whose context ends while waiting gets that end as an *upstream.Error
// (Canceled or Timeout); the load goes on for the others.
func (c *Cache) Snapshot(ctx context.Context) (*upstream.Snapshot, error) {
	s, _, err := c.snapshot(ctx)
	return s, err
}

// snapshot is Snapshot, also reporting whether the answer is stale data
// served because of the returned loadErr (nil otherwise).
func (c *Cache) snapshot(ctx context.Context) (s *upstream.Snapshot, loadErr error, err error) {
	if !c.disabled && c.sched.on.Load() {
		return c.fromSchedule(ctx) // walks follow the clock: no request starts one
	}
	var e *entry // with TTL 0 none is ever held
	var now time.Time
	kind := WalkLoad
	if !c.disabled {
		e, now = c.cur.Load(), c.cfg.Now()
		if c.afterCheck != nil {
			c.afterCheck()
		}
		kind = WalkFirstLoad
	}
	if e != nil {
		age := now.Sub(e.loadedAt)
		if age < c.cfg.TTL {
			if age >= c.refreshAfter {
				c.refresh(ctx, e, WalkRefreshAhead)
			}
			c.outcome(ctx, OutcomeHit)
			return e.val, nil, nil
		}
		if age < c.cfg.Stale {
			// Past TTL the held snapshot keeps answering while one walk
			// refreshes it in the background: no caller waits for a
			// walk, however long (docs/contract.md section 24). After a
			// failed load it is stale data served because of the
			// failure, and a refresh retries once the backoff ends.
			c.refresh(ctx, e, WalkRefresh)
			if c.failing() {
				c.outcome(ctx, OutcomeStale)
				return e.val, errBackoff, nil
			}
			c.outcome(ctx, OutcomeHit)
			return e.val, nil, nil
		}
		kind = WalkRefresh
	}
	v, led, err := c.shared(ctx, &c.group, snapKey, c.loadAfter(e, c.cfg.TTL), kind, c.snapTimeout())
	if !led {
		c.linkFollower(ctx)
	}
	if err != nil && servable(err) {
		if e := c.cur.Load(); e != nil && c.cfg.Now().Sub(e.loadedAt) < c.cfg.Stale {
			c.outcome(ctx, OutcomeStale)
			c.cfg.Logger.DebugContext(ctx, "cache served stale snapshot", "key", c.cfg.Key,
				"age", c.cfg.Now().Sub(e.loadedAt), "error", err)
			return e.val, err, nil
		}
	}
	if c.report(ctx, led, err); err != nil {
		return nil, nil, err
	}
	return v.(*upstream.Snapshot), nil, nil
}

// errBackoff is the reason for stale data served during refresh backoff.
var errBackoff = &upstream.Error{Kind: upstream.Unavailable, RetryAfter: time.Second,
	Err: errors.New("cache: the last snapshot load failed; backing off")}

// report records the outcome of a call that led or joined a load (err:
// its failure), unless it failed because the caller left.
func (c *Cache) report(ctx context.Context, led bool, err error) {
	switch {
	case err != nil && ctx.Err() != nil:
	case led:
		c.outcome(ctx, OutcomeMiss)
	default:
		c.outcome(ctx, OutcomeCoalesced)
	}
}

// refresh starts a background load of the snapshot, of kind (Walk*),
// unless one is running or refreshes are backed off after a failure; seen
// is the entry the caller found due for refresh (the load is skipped when
// a newer one is held by then: loadAfter). It keeps ctx's values (ids,
// trace), not its cancellation. Without Schedule, refreshes happen only
// when someone asks: a brand nobody reads is not refreshed; with it, no
// request calls refresh.
func (c *Cache) refresh(ctx context.Context, seen *entry, kind string) {
	// The flag first: while a walk refreshes the snapshot every request
	// past TTL comes here, and reading it takes no lock.
	if c.refreshing.Load() || c.backingOff(c.cfg.Now()) || !c.refreshing.CompareAndSwap(false, true) {
		return
	}
	if !c.track() {
		c.refreshing.Store(false)
		return
	}
	c.outcome(ctx, OutcomeRefresh)
	// The walk's span starts here, while the request that asked is still
	// open, so that the request can link to it (walk.go).
	vals, endWalk := c.startWalk(context.WithoutCancel(ctx), kind)
	vals = context.WithValue(vals, walkKindKey{}, kind)
	maxAge := min(c.refreshAfter, c.cfg.TTL)
	go func() {
		defer c.wg.Done()
		defer c.refreshing.Store(false)
		// Do, not DoChan: this goroutine waits, so the flag is cleared
		// only once the load (its own or one it joined) has ended.
		_, err, _ := c.group.Do(snapKey, func() (any, error) {
			return c.run(vals, c.loadAfter(seen, maxAge), walkStarted, c.cfg.WalkTimeout)
		})
		endWalk(err) // a failure is logged by the walk that failed (walked)
	}()
}

// failing reports whether the last load failed (and none succeeded since).
func (c *Cache) failing() bool { return c.failed.Load() }

// backingOff reports whether refreshes wait after failed loads.
func (c *Cache) backingOff(now time.Time) bool {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	return now.Before(c.backoffTo)
}

// loaded records the end of a load for the refresh backoff.
func (c *Cache) loaded(err *upstream.Error) {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	c.failed.Store(err != nil)
	if err == nil {
		c.failures, c.backoffTo = 0, time.Time{}
		return
	}
	wait := c.cfg.RefreshBackoff
	for i := 1; i < c.failures && wait < c.cfg.TTL; i++ {
		wait *= 2
	}
	wait = min(wait, max(c.cfg.TTL, c.cfg.RefreshBackoff))
	if err.Kind == upstream.Unavailable {
		wait = max(wait, err.RetryAfter) // the PMS asked for longer
	}
	c.failures++
	c.backoffTo = c.cfg.Now().Add(wait)
}

// loadAfter is loadAndStore for a caller that decided to load after seeing
// seen (nil: nothing held) in cur. Checking cur and joining the shared
// load are two steps: a caller can look before a load stores its snapshot
// and join only after that load has ended, starting a second one. So the
// load that runs looks again first: when cur holds another entry than
// seen, younger than maxAge, some load has already done the work since
// the caller looked, and that entry is the answer (docs/contract.md section 15: one load per
// cold start or expiry, whatever the concurrency).
func (c *Cache) loadAfter(seen *entry, maxAge time.Duration) loadFunc {
	return func(ctx context.Context, kind string) (any, error) {
		if cur := c.cur.Load(); cur != nil && cur != seen && c.cfg.Now().Sub(cur.loadedAt) < maxAge {
			return cur.val, nil
		}
		return c.loadAndStore(ctx, kind)
	}
}

// loadAndStore loads the snapshot and, unless TTL is 0, holds it. kind
// (Walk*) labels its walk span; the walk is counted and told (walkstats.go),
// unless it is a request's own (TTL 0: every read walks for itself, and
// pays for nothing more than before).
func (c *Cache) loadAndStore(ctx context.Context, kind string) (any, error) {
	ctx, end := c.startWalk(ctx, kind)
	if kind == WalkLoad {
		s, err := c.cfg.Load(ctx)
		if err != nil {
			c.refused(ctx, err)
		}
		err = c.store(ctx, s, err)
		end(err)
		return result(s, err)
	}
	if kind == walkStarted {
		kind, _ = ctx.Value(walkKindKey{}).(string)
	}
	st := &upstream.WalkStats{}
	ctx = upstream.WithWalkStats(ctx, st)
	began := c.walks.begin(c.cfg.Now())
	s, err := c.cfg.Load(ctx)
	err = c.store(ctx, s, err)
	// Told once the outcome is in place: a walk logged as finished
	// already serves, and a failed one has set the back-off.
	c.walked(ctx, kind, st, began, err)
	end(err)
	return result(s, err)
}

// result is a load's answer: s, or no value (not a nil *Snapshot) with err.
func result(s *upstream.Snapshot, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}

// store holds s, the outcome of a load that ended with err, unless TTL is
// 0, and returns the load's error (nil: s serves).
func (c *Cache) store(ctx context.Context, s *upstream.Snapshot, err error) error {
	if err == nil && s == nil { // a broken loader; never serve nil
		err = &upstream.Error{Kind: upstream.Internal, Err: errors.New("cache: loader returned no snapshot")}
	}
	if err != nil {
		// Any failure backs refreshes off (a fault of the edge too: the
		// held snapshot answers meanwhile); the edge's own stop does not.
		if e := upstream.Classify(ctx, err, upstream.Internal); e.Kind != upstream.Canceled {
			c.loaded(e)
		}
		return err
	}
	if !c.disabled {
		now := c.cfg.Now()
		c.cur.Store(&entry{val: s, loadedAt: now})
		c.loaded(nil)
		if c.cfg.Metrics != nil {
			c.cfg.Metrics.Serving(s.LoadedAt, now)
		}
	}
	return nil
}

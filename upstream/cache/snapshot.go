package cache

import (
	"context"

	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
)

type snapEntry = entry[*upstream.Snapshot]

// Snapshot returns the brand's properties: from a fresh entry, else from one
// shared load, else (the load failed with a PMS failure, or ctx's deadline
// passed) from an entry younger than Stale. A caller whose context ends
// while waiting gets its context's error; the load goes on for the others.
func (c *Cache) Snapshot(ctx context.Context) (*upstream.Snapshot, error) {
	if c.disabled {
		return c.inner.Snapshot(ctx)
	}
	if e := c.freshSnapshot(ctx); e != nil {
		c.outcome(ctx, OutcomeHit)
		return e.val, nil
	}
	v, led, err := c.load(ctx, c.snapKey, c.loadSnap)
	if err != nil {
		if servable(ctx, err) {
			if e := get[*upstream.Snapshot](c, c.snapKey); e != nil && c.now().Sub(e.loadedAt) < c.stale {
				c.outcome(ctx, OutcomeStale)
				c.log.DebugContext(ctx, "cache served stale snapshot", "key", c.snapKey,
					"age", c.now().Sub(e.loadedAt), "error", err)
				return e.val, nil
			}
		}
		if ctx.Err() == nil {
			c.outcome(ctx, ledOutcome(led))
		}
		return nil, err
	}
	c.outcome(ctx, ledOutcome(led))
	return v.(*snapEntry).val, nil
}

// freshSnapshot returns the stored snapshot if younger than TTL, starting a
// background refresh when it is past RefreshAhead*TTL; nil otherwise.
func (c *Cache) freshSnapshot(ctx context.Context) *snapEntry {
	e := get[*upstream.Snapshot](c, c.snapKey)
	if e == nil {
		return nil
	}
	age := c.now().Sub(e.loadedAt)
	if age >= c.ttl {
		return nil
	}
	if age >= c.refreshAfter && !e.refreshing.Load() {
		c.refresh(ctx, &e.refreshing, c.snapKey, c.loadSnap)
	}
	return e
}

// loadSnapshot is the loadFunc of the snapshot.
func (c *Cache) loadSnapshot(ctx context.Context) (any, error) {
	s, err := c.inner.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if s == nil { // a broken inner Catalog; never cache or serve nil
		return nil, problem.New(problem.InternalError, "An unexpected error occurred.")
	}
	e := &snapEntry{val: s, loadedAt: c.now()}
	c.put(c.snapKey, e)
	return e, nil
}

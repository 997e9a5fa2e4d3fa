package cache

import (
	"context"

	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
)

type itemEntry = entry[*upstream.Item]

// Property returns one property by lower-case id.
//
// While a snapshot younger than TTL is stored, it alone answers, and an id
// absent from it is PROPERTY_NOT_FOUND without asking the PMS: a flood of
// unknown ids touches neither the PMS nor the store. Otherwise a fresh
// per-id entry answers, else one shared load per id asks the PMS; only
// found properties are stored. When that load fails with a PMS failure (or
// ctx's deadline passes), the property is served from the younger of the
// per-id entry and a snapshot holding it, if younger than Stale. An id that
// no stored data younger than Stale holds gets the PMS error, not
// PROPERTY_NOT_FOUND: during an outage the edge does not claim a property
// is gone.
func (c *Cache) Property(ctx context.Context, id string) (*upstream.Item, error) {
	if c.disabled {
		return c.inner.Property(ctx, id)
	}
	if s := c.freshSnapshot(ctx); s != nil {
		c.outcome(ctx, OutcomeHit)
		if it, ok := s.val.Get(id); ok {
			return it, nil
		}
		return nil, notFound()
	}
	key := c.propPrefix + id
	if e := get[*upstream.Item](c, key); e != nil {
		if age := c.now().Sub(e.loadedAt); age < c.ttl {
			if age >= c.refreshAfter && !e.refreshing.Load() {
				c.refresh(ctx, &e.refreshing, key, c.itemLoader(key, id))
			}
			c.outcome(ctx, OutcomeHit)
			return e.val, nil
		}
	}
	v, led, err := c.load(ctx, key, c.itemLoader(key, id))
	if err != nil {
		if servable(ctx, err) {
			if it, ok := c.staleItem(key, id); ok {
				c.outcome(ctx, OutcomeStale)
				c.log.DebugContext(ctx, "cache served stale property", "key", key, "error", err)
				return it, nil
			}
		}
		if ctx.Err() == nil {
			c.outcome(ctx, ledOutcome(led))
		}
		return nil, err
	}
	c.outcome(ctx, ledOutcome(led))
	return v.(*itemEntry).val, nil
}

// itemLoader is the loadFunc of one property. Only a found property is
// stored; PROPERTY_NOT_FOUND passes through and leaves no trace.
func (c *Cache) itemLoader(key, id string) loadFunc {
	return func(ctx context.Context) (any, error) {
		it, err := c.inner.Property(ctx, id)
		if err != nil {
			return nil, err
		}
		if it == nil { // a broken inner Catalog; never cache or serve nil
			return nil, problem.New(problem.InternalError, "An unexpected error occurred.")
		}
		e := &itemEntry{val: it, loadedAt: c.now()}
		c.put(key, e)
		return e, nil
	}
}

// staleItem returns id from the most recently loaded of its per-id entry and
// the snapshot, if that is younger than Stale.
func (c *Cache) staleItem(key, id string) (*upstream.Item, bool) {
	var (
		best *upstream.Item
		at   int64
		ok   bool
	)
	if e := get[*upstream.Item](c, key); e != nil {
		best, at, ok = e.val, e.loadedAt.UnixNano(), true
	}
	if s := get[*upstream.Snapshot](c, c.snapKey); s != nil {
		if it, found := s.val.Get(id); found && (!ok || s.loadedAt.UnixNano() > at) {
			best, at, ok = it, s.loadedAt.UnixNano(), true
		}
	}
	if !ok || c.now().UnixNano()-at >= int64(c.stale) {
		return nil, false
	}
	return best, true
}

func notFound() error {
	return problem.New(problem.PropertyNotFound, "No property with this id is available to the API key.")
}

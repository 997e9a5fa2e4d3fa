package cache

import (
	"context"
	"errors"

	"github.com/partner-edge/partner-edge/upstream"
)

// Property returns one property by lower-case id, from the snapshot (see
// the package doc): an id a fresh snapshot lacks is upstream.NotFound with
// no PMS call, as is one the held snapshot lacks while a walk refreshes it
// past TTL; a cold get waits for the one snapshot load rather than asking
// the PMS for its id (docs/resilience.md, "A get while no snapshot
// exists"). When stale data is served because the PMS failed, an id the
// stale snapshot lacks gets the PMS failure, not NotFound: during an
// outage the edge does not claim a property is gone.
//
// With TTL 0, the inner Catalog's Property is asked, concurrent calls for
// the same id sharing one call.
func (c *Cache) Property(ctx context.Context, id string) (*upstream.Item, error) {
	if c.disabled {
		v, led, err := c.shared(ctx, &c.props, id, c.loadProperty, id, c.cfg.LoadTimeout)
		if c.report(ctx, led, err); err != nil {
			return nil, err
		}
		return v.(*upstream.Item), nil
	}
	s, loadErr, err := c.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	if it, ok := s.Get(id); ok {
		return it, nil
	}
	if loadErr != nil {
		return nil, loadErr
	}
	return nil, &upstream.Error{Kind: upstream.NotFound, Err: errors.New("cache: no such id in the snapshot")}
}

// property is the load of a get with TTL 0 (Cache.loadProperty).
func (c *Cache) property(ctx context.Context, id string) (any, error) {
	it, err := c.inner.Property(ctx, id)
	if err == nil && it == nil { // a broken inner Catalog; never serve nil
		err = &upstream.Error{Kind: upstream.Internal, Err: errors.New("cache: inner catalog returned no item")}
	}
	return it, err
}

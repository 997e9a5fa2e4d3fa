package fleet

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// RefreshAhead is the cache's refresh-ahead with Redis: each instance
// re-reads the shared snapshot every TTL/2, and takes a publication up to
// one TTL old, so the PMS is walked about once per TTL across the fleet
// (a refresh at 0.8 TTL, the in-process default, would walk every 0.8 TTL).
const RefreshAhead = 0.5

// LoaderConfig is one brand and mode's snapshot load shared through a
// fleet's Redis (docs/scaling.md).
type LoaderConfig struct {
	Store       *Store    // leases and publications
	Count       Fallbacks // nil: fallbacks not counted
	Brand, Mode string
	// TTL is the cache's: older publications are never taken. Zero or
	// negative: no loader (the cache does not cache, nothing to share).
	TTL time.Duration
	// LoadTimeout bounds one walk: a leader's lease lasts as long, a
	// loser waits half of it for the leader's publication.
	LoadTimeout time.Duration
	Log         *slog.Logger // nil: discard
	Walk        LoadFunc     // the PMS walk a leader (or a loser that gave up) runs
}

// Loader is the cache's load of cfg's snapshot through a Coordinator; nil
// when cfg.TTL is not positive (the cache's default load). A publication
// seen again (the same load time) gives the same *upstream.Snapshot, so
// the cache does not rebuild its indexes for data it already holds.
func Loader(cfg LoaderConfig) func(context.Context) (*upstream.Snapshot, error) {
	if cfg.TTL <= 0 {
		return nil
	}
	c := &Coordinator{
		Store:      cfg.Store,
		LeaseTTL:   cfg.LoadTimeout, // a leader's walk cannot last longer
		PublishTTL: cfg.TTL,         // older publications are never taken
		Wait:       cfg.LoadTimeout / 2,
		Log:        cfg.Log,
		Count:      cfg.Count,
	}
	var last atomic.Pointer[upstream.Snapshot]
	return func(ctx context.Context) (*upstream.Snapshot, error) {
		l, err := c.Load(ctx, cfg.Brand, cfg.Mode, time.Now().Add(-cfg.TTL), cfg.Walk)
		if err != nil {
			return nil, err
		}
		if prev := last.Load(); prev != nil && prev.LoadedAt.Equal(l.LoadedAt) {
			return prev, nil
		}
		s := upstream.SnapshotOf(l.Properties, l.LoadedAt)
		last.Store(s)
		return s, nil
	}
}

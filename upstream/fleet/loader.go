package fleet

import (
	"cmp"
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/partner-edge/partner-edge/upstream/redisconn"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
)

// RefreshAhead is the refresh-ahead of a cache that requests refresh
// (one nobody schedules: cache.Cache.Schedule) over Redis: each instance
// re-reads the shared snapshot every TTL/2, and takes a publication up to
// one TTL old, so the PMS is walked about once per TTL across the fleet.
// The edge schedules its walks instead (docs/scaling.md).
const RefreshAhead = 0.5

// LoaderConfig is one brand and mode's snapshot load shared through a
// fleet's Redis (docs/scaling.md).
type LoaderConfig struct {
	Store       *Store              // leases and publications
	Count       redisconn.Fallbacks // nil: fallbacks not counted
	Brand, Mode string
	// TTL is the cache's: older publications are never taken. Zero or
	// negative: no loader (the cache does not cache, nothing to share).
	TTL time.Duration
	// WalkTimeout is a walk's budget (EDGE_PMS_WALK_TIMEOUT): a loser
	// waits as long for the leader's publication, the leader's lease being
	// renewed while its walk progresses (Coordinator.LeaseTTL). Zero or
	// negative: upstream.DefaultWalkTimeout.
	WalkTimeout time.Duration
	// LeaseTTL is Coordinator.LeaseTTL: how long the lease lasts past the
	// leader's last page; at least the slowest page with its retries.
	// Zero or negative: DefaultLeaseTTL.
	LeaseTTL time.Duration
	Log      *slog.Logger // nil: discard
	Walk     LoadFunc     // the PMS walk a leader (or a loser that gave up) runs
	// Walks, when set, keeps the fleet's last walk length (read with each
	// load; the leader publishes its own): the cache's LastWalk. Nil:
	// not kept.
	Walks *WalkLengths
}

// loserPollMax is how often, at least, a loser asks for the leader's
// publication during a long walk (polls start at DefaultPoll and double).
const loserPollMax = time.Second

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
		LeaseTTL:   cfg.LeaseTTL,
		PublishTTL: cfg.TTL, // older publications are never taken
		// A loser waits as long as a walk may take: while the leader
		// walks, its lease is renewed; should it die, the lease expires
		// and a loser takes it over at its next round.
		Wait:    cmp.Or(max(cfg.WalkTimeout, 0), upstream.DefaultWalkTimeout),
		PollMax: loserPollMax,
		Log:     cfg.Log,
		Count:   cfg.Count,
	}
	var last atomic.Pointer[upstream.Snapshot]
	snap := SnapKey(cfg.Brand, cfg.Mode)
	var store SnapshotStore // nil, not a nil *Store, without one
	if cfg.Store != nil {
		store = cfg.Store
	}
	return func(ctx context.Context) (*upstream.Snapshot, error) {
		cfg.Walks.read(ctx, store, snap)
		var took time.Duration
		walk := func(ctx context.Context) ([]mapping.Property, time.Time, error) {
			began := time.Now()
			props, at, err := cfg.Walk(ctx)
			took = time.Since(began) // the load runs on this goroutine
			return props, at, err
		}
		l, err := c.Load(ctx, cfg.Brand, cfg.Mode, time.Now().Add(-cfg.TTL), walk)
		if err != nil {
			return nil, err
		}
		if l.Source == SourceLeader {
			cfg.Walks.publish(context.WithoutCancel(ctx), store, snap, took)
		}
		if prev := last.Load(); prev != nil && prev.LoadedAt.Equal(l.LoadedAt) {
			return prev, nil
		}
		s := upstream.SnapshotAfter(last.Load(), l.Properties, l.LoadedAt) // unchanged items shared
		last.Store(s)
		return s, nil
	}
}

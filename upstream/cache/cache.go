// Package cache is the brief cache of mapped properties: a decorator of
// upstream.Catalog that serves data fresh for a TTL, coalesces misses into one
// PMS load, refreshes hot data ahead of expiry, and serves stale data (up to
// a longer age) when the PMS fails or the circuit is open (DECISIONS.md 9).
//
// # Flow
//
// A call first reads the store (github.com/patrickmn/go-cache). An entry
// younger than TTL answers at once: a hit costs one map read under a read
// lock and a time comparison, and allocates nothing. Past RefreshAhead*TTL a
// hit also starts one background load of that entry.
//
// Otherwise the call joins the load of its key through
// golang.org/x/sync/singleflight: a herd of cold calls makes one PMS load.
// The load runs under context.WithoutCancel of the first caller's context
// (its values, such as trace and request ids, are kept) with its own
// LoadTimeout, so a partner who cancels never fails the others waiting; each
// caller waits on its own context and the load's result, and a caller whose
// context ends gets its context's error while the load goes on for the rest.
//
// A load that fails with BAD_GATEWAY, SERVICE_UNAVAILABLE or GATEWAY_TIMEOUT
// (the PMS failed, the circuit is open, the PMS was too slow), or a caller
// whose own deadline passed while waiting, is answered with the entry if it
// is younger than Stale. Any other error (PROPERTY_NOT_FOUND, INTERNAL_ERROR,
// a cancellation) is returned as is: it is not a PMS failure.
//
// # What is stored, and why it is bounded
//
// Keys are "<Config.Key>/snapshot" (every property of the brand) and
// "<Config.Key>/property/<id>" for properties the PMS answered as found.
// Not-found answers are never stored, and while a snapshot younger than TTL
// exists Property answers from it alone, unknown ids included, without
// asking the PMS. So the number of entries is bounded by the number of real
// properties, never by what partners send.
//
// The trade-off: a property created in the PMS less than TTL ago may answer
// PROPERTY_NOT_FOUND for up to TTL (the snapshot does not know it yet), and
// a deleted one may be served for up to TTL, or Stale during an outage.
//
// Entries carry their own load time (go-cache hides expired entries and
// measures on the wall clock); they leave the store at Stale. The store runs
// no janitor: go-cache stops its janitor goroutine only from a finalizer,
// which no test can wait for. Expired entries are swept after a store at
// most once per TTL instead, which the bounded key set makes cheap.
package cache

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	gocache "github.com/patrickmn/go-cache"
	"golang.org/x/sync/singleflight"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
)

var _ upstream.Catalog = (*Cache)(nil)

// Cache is an upstream.Catalog that caches another one. It is safe for
// concurrent use. Close stops its background loads.
type Cache struct {
	inner        upstream.Catalog
	disabled     bool
	ttl          time.Duration
	stale        time.Duration
	loadTimeout  time.Duration
	refreshAfter time.Duration // age from which a hit refreshes; > ttl: never
	now          func() time.Time
	log          *slog.Logger
	onOutcome    func(string)
	metrics      *observability.PMSMetrics // nil: none

	snapKey    string
	propPrefix string
	loadSnap   loadFunc

	store     *gocache.Cache
	group     singleflight.Group
	lastSweep atomic.Int64 // unix nanoseconds of Now at the last sweep

	// base is cancelled by Close; every load stops with it.
	base   context.Context
	cancel context.CancelFunc
	mu     sync.Mutex // guards closed and the wg.Add calls
	closed bool
	wg     sync.WaitGroup // running loads and refresh goroutines
}

// entry is one stored value with its own freshness stamp.
type entry[T any] struct {
	val      T
	loadedAt time.Time // Config.Now when the PMS answered
	// refreshing is set while a background refresh of this entry runs, so
	// at most one is in flight; the refreshed entry replaces this one.
	refreshing atomic.Bool
}

// loadFunc loads from the inner Catalog under ctx and stores the result. It
// returns the stored entry.
type loadFunc func(ctx context.Context) (any, error)

// New returns a Cache of inner configured by cfg (see Config for defaults).
func New(inner upstream.Catalog, cfg Config) *Cache {
	c := &Cache{
		inner:       inner,
		disabled:    cfg.TTL <= 0,
		ttl:         cfg.TTL,
		stale:       cfg.Stale,
		loadTimeout: cfg.LoadTimeout,
		now:         cfg.Now,
		log:         cfg.Logger,
		onOutcome:   cfg.OnOutcome,
		metrics:     cfg.Metrics,
		snapKey:     cfg.Key + "/snapshot",
		propPrefix:  cfg.Key + "/property/",
	}
	if c.stale == 0 {
		c.stale = DefaultStale
	}
	if c.stale < c.ttl {
		c.stale = c.ttl
	}
	if c.loadTimeout <= 0 {
		c.loadTimeout = DefaultLoadTimeout
	}
	ahead := cfg.RefreshAhead
	if ahead <= 0 {
		ahead = DefaultRefreshAhead
	}
	c.refreshAfter = time.Duration(ahead * float64(c.ttl))
	if ahead >= 1 {
		c.refreshAfter = c.ttl + 1 // never reached by a fresh entry
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.store = gocache.New(c.stale, 0) // no janitor: see the package doc
	c.base, c.cancel = context.WithCancel(context.Background())
	c.loadSnap = c.loadSnapshot
	return c
}

// Close cancels the loads in flight, waits until every goroutine the Cache
// started has ended, and makes later loads fail with SERVICE_UNAVAILABLE
// (so data younger than Stale is still served while the edge drains). It
// does not close the inner Catalog. Close is idempotent.
func (c *Cache) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// Len is the number of stored entries, expired ones not yet swept included.
func (c *Cache) Len() int { return c.store.ItemCount() }

// track registers a load or refresh goroutine; false once closed.
func (c *Cache) track() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.wg.Add(1)
	return true
}

// outcome reports o for the call of ctx: to OnOutcome, and, unless it is
// a refresh (not the caller's answer), to the metrics and the caller's
// CallStats.
func (c *Cache) outcome(ctx context.Context, o string) {
	if c.onOutcome != nil {
		c.onOutcome(o)
	}
	if o == OutcomeRefresh {
		return
	}
	if c.metrics != nil {
		c.metrics.Cache(ctx, observability.CacheOutcome(o))
	}
	upstream.CallerIDsFrom(ctx).Stats.SetCacheOutcome(o)
}

func ledOutcome(led bool) string {
	if led {
		return OutcomeMiss
	}
	return OutcomeCoalesced
}

// load joins or starts the load of key and waits for it or for ctx. led
// reports whether this call's fn ran.
func (c *Cache) load(ctx context.Context, key string, fn loadFunc) (v any, led bool, err error) {
	ran := false
	ch := c.group.DoChan(key, func() (any, error) {
		ran = true // read only after the result arrives on ch
		return c.run(ctx, fn)
	})
	select {
	case <-ctx.Done():
		return nil, false, ctx.Err()
	case r := <-ch:
		if pe, ok := r.Err.(*problem.Error); ok && r.Shared {
			// Each caller owns its error: the edge may annotate it
			// (headers, detail) while others write theirs.
			cp := *pe
			return nil, ran, &cp
		}
		return r.Val, ran, r.Err
	}
}

// refresh starts a background load of key unless one of this entry is
// running already (flag). It keeps ctx's values, not its cancellation.
func (c *Cache) refresh(ctx context.Context, flag *atomic.Bool, key string, fn loadFunc) {
	if !flag.CompareAndSwap(false, true) {
		return
	}
	if !c.track() {
		flag.Store(false)
		return
	}
	c.outcome(ctx, OutcomeRefresh)
	vals := context.WithoutCancel(ctx)
	// The refresh's attempts are not the triggering request's: that
	// request was answered from the cache (its access line says hit, 0
	// attempts). Its ids stay, for the PMS and the logs.
	if ids := upstream.CallerIDsFrom(vals); ids.Stats != nil {
		ids.Stats = nil
		vals = upstream.WithCallerIDs(vals, ids)
	}
	go func() {
		defer c.wg.Done()
		defer flag.Store(false)
		// Do, not DoChan: this goroutine waits, so the flag is cleared
		// only once the load (its own or one it joined) has ended.
		_, err, _ := c.group.Do(key, func() (any, error) { return c.run(vals, fn) })
		if err != nil {
			c.log.DebugContext(vals, "cache refresh failed", "key", key, "error", err)
		}
	}()
}

// run executes one load detached from ctx's cancellation, under LoadTimeout
// and Close.
func (c *Cache) run(ctx context.Context, fn loadFunc) (any, error) {
	if !c.track() {
		return nil, closedError()
	}
	defer c.wg.Done()
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.loadTimeout)
	defer cancel()
	stop := context.AfterFunc(c.base, cancel)
	defer stop()
	v, err := fn(lctx)
	if err != nil {
		return nil, c.classify(lctx, err)
	}
	return v, nil
}

// classify turns the load context's own end into a problem: the inner
// Catalog returns a context's error unchanged, but to the callers of a
// shared load it is not their cancellation.
func (c *Cache) classify(lctx context.Context, err error) error {
	var pe *problem.Error
	if errors.As(err, &pe) || lctx.Err() == nil {
		return err
	}
	if c.base.Err() != nil {
		return closedError()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &problem.Error{Code: problem.GatewayTimeout, Err: err}
	}
	return err
}

func closedError() error {
	return &problem.Error{Code: problem.ServiceUnavailable, Err: errors.New("cache: closed")}
}

// servable reports whether err allows serving stale data: a PMS failure, or
// the caller's own deadline passing while it waited.
func servable(ctx context.Context, err error) bool {
	var pe *problem.Error
	if errors.As(err, &pe) {
		switch pe.Code {
		case problem.BadGateway, problem.ServiceUnavailable, problem.GatewayTimeout:
			return true
		}
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// put stores e under key and sweeps expired entries at most once per TTL.
func (c *Cache) put(key string, e any) {
	c.store.Set(key, e, gocache.DefaultExpiration)
	now := c.now().UnixNano()
	last := c.lastSweep.Load()
	if now-last >= int64(c.ttl) && c.lastSweep.CompareAndSwap(last, now) {
		c.store.DeleteExpired()
	}
}

// get returns the entry stored under key, or nil.
func get[T any](c *Cache, key string) *entry[T] {
	v, ok := c.store.Get(key)
	if !ok {
		return nil
	}
	e, _ := v.(*entry[T])
	return e
}

// Package cache is the read model of one (brand, mode) (docs/contract.md
// sections 9 and 11): a decorator of upstream.Catalog that holds one
// snapshot of the brand, loaded by the list walk, and answers both routes
// from it. docs/resilience.md, "Cache: the read model", draws the flow:
// a snapshot younger than TTL answers (an id it lacks is upstream.NotFound
// without a PMS call), past RefreshAhead*TTL a call also starts one
// background refresh; past TTL, a snapshot younger than Stale keeps
// answering while one background walk refreshes it (docs/contract.md
// section 24); without one, every call joins the one shared load
// (singleflight), which runs with the first caller's values, not its
// cancellation, under WalkTimeout (a walk's budget), and each caller
// waits until its own deadline (then Unavailable, with a Retry-After); a
// PMS failure is answered from a snapshot younger than Stale and backs
// refreshes off; a panicking load fails its waiters with
// upstream.Internal. Prime starts the first walk before anyone asks. With
// TTL 0 nothing is held, but concurrent identical calls share one call,
// under LoadTimeout.
//
// That is a Cache nobody schedules. The edge calls Schedule
// (schedule.go): walks then follow the clock, not the traffic (one a TTL
// after the last ended; with TTL 0, the events feed's every WalkEvery),
// no request starts one, and a request without a snapshot waits at most
// SnapshotWait for the walk under way (docs/contract.md section 24).
//
// The store is one atomic pointer to the current snapshot, replaced whole
// by each load: nothing a partner sends adds an entry.
package cache

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/singleflight"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

var _ upstream.Catalog = (*Cache)(nil)

// Cache is an upstream.Catalog that caches another one. It is safe for
// concurrent use. Close stops its background loads.
type Cache struct {
	cfg          Config                    // defaults applied (New)
	lastWalk     atomic.Pointer[walkLinks] // the latest walk, for its followers' links (walk.go)
	inner        upstream.Catalog
	disabled     bool
	refreshAfter time.Duration // age from which a hit refreshes; > ttl: never

	cur        atomic.Pointer[entry] // the held snapshot; nil: none
	group      singleflight.Group    // the snapshot's load
	props      singleflight.Group    // gets with TTL 0, by id
	waiters    sync.Pool             // *waiter (shared)
	refreshing atomic.Bool           // a background refresh runs

	afterCheck func() // test hook: called once snapshot has looked at cur; nil: none

	walks walkClock // when the walk under way started, how long the last one took (walkstats.go)
	sched schedule  // the walks on the clock (schedule.go)
	// refusedAt (Config.Now, unix nanoseconds) is when the last refusal
	// error was logged (walkstats.go); 0: never.
	refusedAt atomic.Int64
	// walkFails paces the "pms walk failed" lines (walkstats.go): at
	// most one a minute per error kind, the next counting those left out.
	walkFails observability.Throttle

	bmu       sync.Mutex
	failures  int         // failed loads in a row
	backoffTo time.Time   // no background refresh before this
	failed    atomic.Bool // failures > 0, read without bmu (failing)

	// base is cancelled by Close; every load stops with it.
	base   context.Context
	cancel context.CancelFunc
	mu     sync.Mutex // guards closed and the wg.Add calls
	closed bool
	wg     sync.WaitGroup // running loads and refresh goroutines

	loadProperty loadFunc // c.property, bound once
}

// entry is the held snapshot with its own freshness stamp.
type entry struct {
	val      *upstream.Snapshot
	loadedAt time.Time // Config.Now when the load ended
}

const snapKey = "snapshot"

// New returns a Cache of inner configured by cfg (see Config for defaults).
func New(inner upstream.Catalog, cfg Config) *Cache {
	if cfg.Load == nil {
		cfg.Load = inner.Snapshot
	}
	cfg.Stale = max(cmp.Or(cfg.Stale, DefaultStale), cfg.TTL)
	cfg.LoadTimeout = cmp.Or(max(cfg.LoadTimeout, 0), DefaultLoadTimeout)
	cfg.WalkTimeout = cmp.Or(max(cfg.WalkTimeout, 0), DefaultWalkTimeout)
	cfg.RefreshBackoff = cmp.Or(max(cfg.RefreshBackoff, 0), DefaultRefreshBackoff)
	cfg.WalkEvery = cmp.Or(max(cfg.WalkEvery, 0), DefaultWalkEvery)
	cfg.SnapshotWait = cmp.Or(max(cfg.SnapshotWait, 0), DefaultSnapshotWait)
	ahead := cmp.Or(max(cfg.RefreshAhead, 0), DefaultRefreshAhead)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LinkRequest == nil {
		cfg.LinkRequest = func(ctx context.Context, l trace.Link) { trace.SpanFromContext(ctx).AddLink(l) }
	}
	if cfg.KeepWalk == nil {
		cfg.KeepWalk = (*observability.Telemetry)(nil).KeepWalk // every walk kept
	}
	if cfg.KeepRequest == nil {
		cfg.KeepRequest = (*observability.Telemetry)(nil).KeepRequest // kept when sampled
	}
	if cfg.LeadLoad == nil {
		cfg.LeadLoad = (*observability.Telemetry)(nil).LeadLoad // linkable when sampled
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	c := &Cache{cfg: cfg, inner: inner, disabled: cfg.TTL <= 0, refreshAfter: time.Duration(ahead * float64(cfg.TTL))}
	if ahead >= 1 {
		c.refreshAfter = cfg.TTL + 1 // never reached by a fresh snapshot
	}
	c.base, c.cancel = context.WithCancel(context.Background())
	c.waiters.New = c.newWaiter
	c.loadProperty = c.property
	return c
}

// Close cancels the loads in flight, waits until every goroutine the Cache
// started has ended, and makes later loads fail with upstream.Unavailable
// (so data younger than Stale is still served while the edge drains). It
// does not close the inner Catalog. Close is idempotent.
func (c *Cache) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// Len is the number of properties held (active or not), 0 with no
// snapshot.
func (c *Cache) Len() int {
	if e := c.cur.Load(); e != nil {
		return e.val.Len()
	}
	return 0
}

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
// not the caller's answer (refresh, panic), to the metrics and the caller's
// span.
func (c *Cache) outcome(ctx context.Context, o string) {
	if c.cfg.OnOutcome != nil {
		c.cfg.OnOutcome(o)
	}
	if o == OutcomeRefresh || o == OutcomePanic {
		return
	}
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.Lookup(ctx, o)
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(AttrCacheOutcome.String(o))
	}
}

// loadFunc is a load of the cache: fn(ctx, arg) of shared, run under the
// load's context (run), on the caller's goroutine or another. arg saves a
// closure per call: the property of a get is a method value bound once
// and the id.
type loadFunc func(ctx context.Context, arg string) (any, error)

// shared joins or starts the call of key in group and waits for it or for
// ctx. led reports whether this call's fn ran. A caller whose context ends
// first gets that end, classified (leftEarly). A caller whose deadline is
// at least timeout (the load's: run) away, and whose context has not
// ended, cannot be made late by the load, so it runs group.Do on its own
// goroutine (no goroutine started per miss) and never asks ctx.Done
// (which makes a context's channel, an allocation); any other caller hands group.Do to a goroutine and
// leaves at its deadline while the load goes on for the others
// (docs/resilience.md, "Where a caller waits").
func (c *Cache) shared(ctx context.Context, group *singleflight.Group, key string, fn loadFunc, arg string, timeout time.Duration) (v any, led bool, err error) {
	w := c.waiters.Get().(*waiter)
	w.group, w.ctx, w.key, w.fn, w.arg, w.timeout = group, ctx, key, fn, arg, timeout
	if c.inline(ctx, timeout) {
		v, err, shared := group.Do(key, w.load)
		ran := w.ran
		if ran {
			w.claim.Settle(shared)
		}
		c.putWaiter(w) // nobody else holds w: its load, if it led, ran here
		v = c.followLeader(ctx, v, ran)
		if ctx.Err() != nil {
			// The caller left during the load, which filled the cache
			// all the same: the answer of a caller who leaves first.
			return nil, false, upstream.Classify(ctx, ctx.Err(), upstream.Internal)
		}
		return answer(v, err, shared, ran)
	}
	// group.Do on a goroutine of its own, as DoChan: the caller can still
	// leave when ctx ends, and the load goes on.
	go w.run()
	select {
	case <-ctx.Done():
		// w stays with its goroutine, which still sends on w.res: it
		// is not reused.
		return nil, false, c.leftEarly(ctx, group)
	case r := <-w.res:
		ran := w.ran
		c.putWaiter(w)
		return answer(c.followLeader(ctx, r.Val, ran), r.Err, r.Shared, ran)
	}
}

// inline reports whether a caller of shared with ctx waits for a load of
// timeout on its own goroutine: its deadline is not earlier than timeout
// from now and its context has not ended (see shared). The clock is
// time.Now, not Config.Now: the caller's deadline and the load's timeout
// are both measured by the runtime's clock, which an injected Now need not
// follow. Err, not Done: Done would make the context's channel.
func (c *Cache) inline(ctx context.Context, timeout time.Duration) bool {
	d, ok := ctx.Deadline()
	return ok && !d.Before(time.Now().Add(timeout)) && ctx.Err() == nil
}

// leftEarly is the answer of a caller of shared whose context ended
// before the load of group: its end, classified, except that a deadline
// passing while a walk of the snapshot goes on is no timeout of the PMS
// but a load still under way: Unavailable, with a Retry-After
// (docs/contract.md section 24: 503, never 504, while a walk progresses).
func (c *Cache) leftEarly(ctx context.Context, group *singleflight.Group) error {
	if group == &c.group && !c.disabled && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &upstream.Error{Kind: upstream.Unavailable, RetryAfter: c.walks.retryAfter(c.cfg.Now(), c.cfg.LastWalk), Err: errWalking}
	}
	return upstream.Classify(ctx, ctx.Err(), upstream.Internal)
}

// errWalking is the cause of a caller's 503 while the walk it waited for
// goes on.
var errWalking = errors.New("cache: the snapshot's walk is under way")

// answer is a shared call's result for one caller; ran: this caller's fn
// ran (it led).
func answer(v any, err error, shared, ran bool) (any, bool, error) {
	if e, ok := err.(*upstream.Error); ok && shared {
		// Each caller owns its error value.
		cp := *e
		return nil, ran, &cp
	}
	return v, ran, err
}

// waiter is one caller's call of shared, run inline or on a goroutine of
// its own. Waiters are pooled (Cache.waiters) with their channel and bound
// method, so a call costs no allocation of its own: a waiter goes back to
// the pool only after its caller received the result, the goroutine's
// last use of it (inline: after group.Do returned).
type waiter struct {
	c     *Cache
	group *singleflight.Group
	ctx   context.Context
	key   string
	fn    loadFunc
	arg   string
	// timeout is the load's deadline (run).
	timeout time.Duration
	ran     bool                     // fn ran in this call (the caller led); read after res
	claim   observability.Lead       // with TTL 0, the leader's claim for its followers' links (walk.go)
	res     chan singleflight.Result // capacity 1
	load    func() (any, error)      // w.lead, bound once
}

// putWaiter clears w and returns it to the pool.
func (c *Cache) putWaiter(w *waiter) {
	*w = waiter{c: c, res: w.res, load: w.load}
	c.waiters.Put(w)
}

func (c *Cache) newWaiter() any {
	w := &waiter{c: c, res: make(chan singleflight.Result, 1)}
	w.load = w.lead
	return w
}

// run is the goroutine's side: the shared call, its result to the caller.
// The leader's claim is settled here, whether its caller is still there
// or not.
func (w *waiter) run() {
	v, err, shared := w.group.Do(w.key, w.load)
	if w.ran {
		w.claim.Settle(shared)
	}
	w.res <- singleflight.Result{Val: v, Err: err, Shared: shared} // the last use of w
}

// lead is the load itself, run when this call leads. With TTL 0 its
// result carries the leader's claim (ledLoad, walk.go), made before the
// followers see it.
func (w *waiter) lead() (any, error) {
	w.ran = true // read by the caller only after the result arrives on res
	v, err := w.c.run(w.ctx, w.fn, w.arg, w.timeout)
	if w.c.disabled {
		w.claim = w.c.cfg.LeadLoad(w.ctx)
		return &ledLoad{v: v, lead: w.claim}, err
	}
	return v, err
}

// run executes one load detached from ctx's cancellation, under timeout
// (LoadTimeout, or WalkTimeout for a walk: snapTimeout) and Close. A panic
// in fn is recovered into an upstream.Internal error.
func (c *Cache) run(ctx context.Context, fn loadFunc, arg string, timeout time.Duration) (v any, err error) {
	if !c.track() {
		return nil, errClosed
	}
	defer c.wg.Done()
	// The load's deadline is a child of base, which Close cancels; the
	// caller's values (trace, caller ids) come along, its cancellation
	// does not (loadContext).
	tctx, cancel := context.WithTimeout(c.base, timeout)
	defer cancel()
	lctx := &loadContext{Context: tctx, values: ctx}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, &upstream.Error{Kind: upstream.Internal, Err: fmt.Errorf("cache load panicked: %v", r)}
			c.cfg.Logger.ErrorContext(ctx, "cache load panicked", "key", c.cfg.Key, "panic", fmt.Sprint(r),
				"stack", string(debug.Stack()))
			c.outcome(ctx, OutcomePanic)
			if c.cfg.Metrics != nil {
				c.cfg.Metrics.LoadPanic(ctx)
			}
		}
	}()
	v, err = fn(lctx, arg)
	if err != nil {
		if c.base.Err() != nil {
			return nil, errClosed
		}
		return nil, upstream.Classify(lctx, err, upstream.Internal)
	}
	return v, nil
}

// loadContext is a load's context: the deadline and cancellation of its
// embedded context (the load's timeout under the cache's base), the values of
// the caller that started it. It is what context.WithoutCancel, a timeout
// and an AfterFunc on base make together, in one allocation instead of
// four. Value asks the embedded context first, so a context derived from
// this one finds the cancellation it is tied to (and needs no goroutine
// to follow it), and the caller's values after that.
type loadContext struct {
	context.Context
	values context.Context
}

func (l *loadContext) Value(key any) any {
	if v := l.Context.Value(key); v != nil {
		return v
	}
	return l.values.Value(key)
}

func (l *loadContext) String() string { return "cache.loadContext" }

// snapTimeout is the deadline of a load of the snapshot: a walk's budget,
// or with TTL 0 (every read is a partner's own walk) LoadTimeout.
func (c *Cache) snapTimeout() time.Duration {
	if c.disabled {
		return c.cfg.LoadTimeout
	}
	return c.cfg.WalkTimeout
}

// errClosed fails the loads of a closed Cache.
var errClosed = &upstream.Error{Kind: upstream.Unavailable, RetryAfter: time.Second, Err: errors.New("cache: closed")}

// servable reports whether err allows serving stale data: a PMS failure, or
// the caller's own deadline passing while it waited.
func servable(err error) bool {
	switch upstream.KindOf(err) {
	case upstream.BadGateway, upstream.Unavailable, upstream.Timeout:
		return true
	}
	return false
}

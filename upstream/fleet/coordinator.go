package fleet

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/partner-edge/partner-edge/upstream/redisconn"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// SnapshotStore is what the coordinator needs of a store (Store implements
// it; tests use fakes).
type SnapshotStore interface {
	Lease(ctx context.Context, name string, ttl time.Duration) (bool, error)
	Release(ctx context.Context, name string) error
	Publish(ctx context.Context, name string, version int64, payload []byte, ttl time.Duration) error
	Fetch(ctx context.Context, name string) ([]byte, int64, time.Time, error)
}

// Source says where a coordinated snapshot came from.
type Source string

const (
	SourceLeader Source = "leader" // this instance won the lease, walked the PMS and published
	SourceShared Source = "shared" // another instance's publication
	SourceLocal  Source = "local"  // walked the PMS itself: Redis failed, or no publication in time
)

// LoadFunc walks the PMS.
type LoadFunc func(ctx context.Context) ([]mapping.Property, time.Time, error)

// Loaded is a coordinated snapshot.
type Loaded struct {
	Properties []mapping.Property
	LoadedAt   time.Time
	Source     Source
}

// Coordinator shares one PMS walk per brand and mode among the fleet, as
// docs/scaling.md, The snapshot protocol, tells: a fresh publication is
// taken, else the lease's winner walks, publishes and releases while the
// others poll (every Poll, up to Wait) and retry the lease. Redis
// unavailable means a local walk, never an error: only the PMS walk's own
// error is returned. The zero Coordinator is usable: it loads locally (nil
// Store) with the documented defaults, so a missing field never panics or
// leaves a lease without expiry.
type Coordinator struct {
	Store SnapshotStore // leases and publications; nil: every load is local
	// LeaseTTL is how long the leader's lease lasts past its last renewal:
	// the leader renews it as the pages of its walk arrive (at most every
	// LeaseTTL/3), so it lasts as long as the walk, whatever the walk's
	// length, and a crashed leader's lease expires LeaseTTL after its last
	// page. It must outlast the slowest page (its attempts and retry
	// waits). <= 0: DefaultLeaseTTL.
	LeaseTTL   time.Duration
	PublishTTL time.Duration // how long a publication lives (about the cache TTL); <= 0: DefaultPublishTTL
	// Wait bounds a loser's wait (<= 0: none, a loser walks at once): with
	// the leader's lease renewed while its walk progresses, as long as a
	// walk may take. Poll is its polling interval (<= 0: DefaultPoll),
	// doubled each round up to PollMax (<= Poll: fixed).
	Wait, Poll, PollMax time.Duration
	// Log (nil: discard) and Count (nil: none) report fallbacks; Log
	// also gets a warning for each publication refused as forged.
	Log   *slog.Logger
	Count redisconn.Fallbacks
	Now   func() time.Time // the clock a publication's load time is checked against (MaxSkew); nil: time.Now

	waiting func() // test hook: called when a Load first waits (a loser starts polling)
	// refusals bounds the warnings of refused publications: a forgery
	// stays in Redis and would be refused on every load.
	refusals observability.Throttle
}

// Defaults of the Coordinator's zero fields.
const (
	DefaultLeaseTTL   = 30 * time.Second
	DefaultPublishTTL = 30 * time.Second
	DefaultPoll       = 50 * time.Millisecond
)

// publishAttempts bounds the leader's attempts to publish its walk.
const publishAttempts = 3

// Load returns brand and mode's snapshot, loaded after newerThan. One walk
// per cold fleet holds by construction (docs/contract.md section 17), not
// by timing: the lease is the only permission to walk while Redis works,
// and its winner looks for a publication again first (recheck). A call
// that fails while Redis counts as up (transient) is asked again at the
// next Poll; only Redis known unavailable, an unusable publication held by
// another, or Wait passing mean a walk without the lease.
//
// When ctx carries an upstream.WalkStats, the PMS walk's own length and
// the time spent before it (or before taking a publication) waiting for
// another member are recorded there apart (docs/contract.md section 24:
// a walk's duration counts the PMS walk alone).
func (c *Coordinator) Load(ctx context.Context, brand, mode string, newerThan time.Time, load LoadFunc) (Loaded, error) {
	st := upstream.WalkStatsFrom(ctx)
	if st == nil {
		return c.load(ctx, brand, mode, newerThan, load)
	}
	began := time.Now()
	var walkStart time.Time // zero: no walk (a publication was taken)
	timed := func(ctx context.Context) ([]mapping.Property, time.Time, error) {
		walkStart = time.Now() // the load runs on this goroutine
		props, at, err := load(ctx)
		st.SetWalkTime(time.Since(walkStart))
		return props, at, err
	}
	l, err := c.load(ctx, brand, mode, newerThan, timed)
	if c.Store != nil {
		if walkStart.IsZero() {
			st.SetLeaseWait(time.Since(began))
		} else {
			st.SetLeaseWait(walkStart.Sub(began))
		}
	}
	return l, err
}

// load is Load without the timing.
func (c *Coordinator) load(ctx context.Context, brand, mode string, newerThan time.Time, load LoadFunc) (Loaded, error) {
	name := SnapKey(brand, mode)
	if c.Store == nil {
		return c.walk(ctx, name, load, SourceLocal, false)
	}
	w := &waiter{c: c}
	waited := false // another member held the lease in an earlier round
	for first := true; ; first = false {
		if !first {
			if err := w.next(ctx); err != nil {
				if ctx.Err() != nil {
					return Loaded{}, ctx.Err()
				}
				return c.local(ctx, name, load, err, true)
			}
		}
		got, err := c.fetch(ctx, name, newerThan)
		switch {
		case got != nil:
			return *got, nil
		case redisconn.Transient(err):
			continue // no answer: a publication may be there; ask again
		case err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, errStale) && !badPublication(err):
			return c.local(ctx, name, load, err, false)
		}
		bad := badPublication(err)
		won, err := c.Store.Lease(ctx, name, c.leaseTTL())
		switch {
		case redisconn.Transient(err):
			continue // the lease may be ours (Lease takes it again) or another's
		case err != nil:
			return c.local(ctx, name, load, err, false)
		case won && bad:
			return c.lead(ctx, name, load) // the leader overwrites an unusable publication
		case won:
			return c.recheck(ctx, w, name, newerThan, load, waited)
		case bad: // someone else leads; do not wait on a publication we cannot read
			return c.local(ctx, name, load, errors.New("unreadable publication"), false)
		}
		// Another instance leads: wait for its publication; should it fail
		// or die, the next round takes the lease over.
		waited = true
	}
}

// recheck runs with the lease won: a publication may have landed between
// the last look and the lease (its leader published and released), so it
// looks once more, and walks only when there is none. took: another
// member held the lease before, and its walk published nothing: this
// member takes the walk over from one that stopped, and says so.
func (c *Coordinator) recheck(ctx context.Context, w *waiter, name string, newerThan time.Time, load LoadFunc, took bool) (Loaded, error) {
	for {
		got, err := c.fetch(ctx, name, newerThan)
		if got != nil {
			_ = c.Store.Release(context.WithoutCancel(ctx), name)
			return *got, nil
		}
		if !redisconn.Transient(err) {
			if took && c.Log != nil {
				c.Log.InfoContext(ctx, "walk taken over: the member that held the lease published nothing (it stopped, or its walk failed)",
					"snapshot", name, "lease", c.leaseTTL().String())
			}
			return c.lead(ctx, name, load)
		}
		// No answer: holding the lease, ask again rather than walk
		// beside a publication that may be there.
		if err := w.next(ctx); err != nil {
			if ctx.Err() != nil {
				_ = c.Store.Release(context.WithoutCancel(ctx), name)
				return Loaded{}, ctx.Err()
			}
			return c.lead(ctx, name, load)
		}
	}
}

// waiter paces a Load's rounds: one per poll interval (Poll, doubled each
// round up to PollMax), until Wait has passed since the first round
// waited. The test hook waiting runs when it first waits. Its timers need
// no Stop: unreferenced, they are collected.
type waiter struct {
	c        *Coordinator
	deadline *time.Timer
	tick     *time.Timer
	every    time.Duration
}

// next waits for the next round; an error when Wait has passed (or ctx
// is done).
func (w *waiter) next(ctx context.Context) error {
	if w.deadline == nil {
		if w.c.waiting != nil {
			w.c.waiting()
		}
		w.deadline = time.NewTimer(max(w.c.Wait, 0))
		w.every = cmp.Or(max(w.c.Poll, 0), DefaultPoll)
		w.tick = time.NewTimer(w.every)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-w.deadline.C:
		return errors.New("no publication in time")
	case <-w.tick.C:
		w.every = max(min(2*w.every, w.c.PollMax), w.every)
		w.tick.Reset(w.every)
		return nil
	}
}

// lead walks the PMS holding the lease, renewing it as the walk's pages
// arrive (lease), publishes, and releases the lease.
func (c *Coordinator) lead(ctx context.Context, name string, load LoadFunc) (Loaded, error) {
	defer func() { _ = c.Store.Release(context.WithoutCancel(ctx), name) }()
	l := &lease{c: c, ctx: context.WithoutCancel(ctx), name: name, ttl: c.leaseTTL()}
	l.next = time.Now().Add(l.ttl / 3)
	return c.walk(upstream.OnPage(ctx, l.renew), name, load, SourceLeader, true)
}

// leaseTTL is LeaseTTL or its default.
func (c *Coordinator) leaseTTL() time.Duration { return cmp.Or(max(c.LeaseTTL, 0), DefaultLeaseTTL) }

// lease is a leader's lease while it walks: renewed as pages arrive, at
// most every ttl/3, so it lasts as long as the walk (docs/contract.md
// section 24: one walk per TTL per fleet, whatever the walk's length) and
// ends ttl after the last page of a leader that stopped. renew runs on the
// walk's goroutine (upstream.OnPage): one Redis round trip every ttl/3.
type lease struct {
	c    *Coordinator
	ctx  context.Context
	name string
	ttl  time.Duration
	next time.Time // no renewal before
	lost bool      // logged once
}

func (l *lease) renew() {
	now := time.Now()
	if now.Before(l.next) {
		return
	}
	l.next = now.Add(l.ttl / 3)
	won, err := l.c.Store.Lease(l.ctx, l.name, l.ttl)
	if err == nil && !won && !l.lost && l.c.Log != nil {
		// Another instance took the lease after ours expired (a page
		// slower than LeaseTTL): it walks too; this walk still publishes.
		l.lost = true
		l.c.Log.WarnContext(l.ctx, "walk lease lost to another instance; raise the lease above the slowest page", "snapshot", l.name,
			"lease", l.ttl.String())
	}
}

// MaxSkew is how far in the future a publication's load time may be
// (clocks of instances differ a little; docs/contract.md section 15: 5 s).
const MaxSkew = 5 * time.Second

// errFromFuture is a publication whose load time is beyond MaxSkew ahead:
// written with the secret, but not by a walk that has happened (a clock
// far off, or a forgery). It is never used.
var errFromFuture = errors.New("fleet: published snapshot loaded in the future")

// badPublication: a publication is there but cannot be used.
func badPublication(err error) bool {
	return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTooLarge) ||
		errors.Is(err, ErrUnauthenticated) || errors.Is(err, errFromFuture)
}

var errStale = errors.New("fleet: publication older than wanted")

// fetch returns a decoded publication loaded after newerThan, or why not.
func (c *Coordinator) fetch(ctx context.Context, name string, newerThan time.Time) (*Loaded, error) {
	payload, version, _, err := c.Store.Fetch(ctx, name)
	if errors.Is(err, ErrUnauthenticated) {
		c.refused(ctx, name, err)
	}
	if err != nil {
		return nil, err
	}
	limit := time.Now().Add(MaxSkew)
	if c.Now != nil {
		limit = c.Now().Add(MaxSkew)
	}
	if version > limit.UnixMilli() {
		c.refused(ctx, name, errFromFuture)
		return nil, errFromFuture
	}
	if version <= newerThan.UnixMilli() {
		return nil, errStale
	}
	props, at, err := DecodeSnapshot(payload)
	if err != nil {
		return nil, err
	}
	if at.After(limit) {
		c.refused(ctx, name, errFromFuture)
		return nil, errFromFuture
	}
	return &Loaded{Properties: props, LoadedAt: at, Source: SourceShared}, nil
}

// refused logs a publication refused as forged (docs/contract.md section
// 15), at most once per observability.LogEvery per reason, with the count
// of those left out: a forgery stays in Redis until the next publication,
// and every load meets it.
func (c *Coordinator) refused(ctx context.Context, name string, why error) {
	if c.Log == nil {
		return
	}
	suppressed, ok := c.refusals.Allow(name + " " + why.Error())
	if !ok {
		return
	}
	c.Log.WarnContext(ctx, "shared snapshot refused; loading from the PMS", "snapshot", name, "reason", why.Error(),
		"suppressed", suppressed, "repeats_every", observability.LogEvery.String())
}

// local walks the PMS after a failure of the shared path; publish says
// whether Redis is worth publishing to.
func (c *Coordinator) local(ctx context.Context, name string, load LoadFunc, why error, publish bool) (Loaded, error) {
	if c.Count != nil {
		c.Count.Fallback(ctx, redisconn.UseSnapshot, why)
	}
	if c.Log != nil {
		c.Log.DebugContext(ctx, "snapshot loads locally", "snapshot", name, "reason", why.Error())
	}
	return c.walk(ctx, name, load, SourceLocal, publish)
}

// walk loads from the PMS and, when publish says so, publishes (best
// effort); the result comes from src.
func (c *Coordinator) walk(ctx context.Context, name string, load LoadFunc, src Source, publish bool) (Loaded, error) {
	props, at, err := load(ctx)
	if err != nil || !publish {
		return Loaded{Properties: props, LoadedAt: at, Source: src}, err
	}
	if payload, err := EncodeSnapshot(props, at); err == nil {
		// A publish that timed out while Redis counts as up is sent again
		// (a few times): the others wait for it, and without it one of
		// them takes the lease over and walks again.
		for range publishAttempts {
			if err := c.Store.Publish(ctx, name, at.UnixMilli(), payload, cmp.Or(max(c.PublishTTL, 0), DefaultPublishTTL)); !redisconn.Transient(err) {
				break
			}
		}
	}
	return Loaded{Properties: props, LoadedAt: at, Source: src}, nil
}

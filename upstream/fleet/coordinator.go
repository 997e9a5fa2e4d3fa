package fleet

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
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

// Coordinator shares one PMS walk per brand and mode among the fleet:
//
//  1. a publication loaded after newerThan is taken as is;
//  2. else whoever wins the lease walks the PMS, publishes and releases;
//  3. a loser polls the publication every Poll until one loaded after
//     newerThan appears or Wait passes, then walks the PMS itself; while
//     polling it retries the lease, so a leader that failed (or died: its
//     lease expires after LeaseTTL) is replaced at once.
//
// Any Redis failure means a local walk, never an error: only the PMS walk's
// own error is returned. A corrupt or oversize publication is overwritten
// by whoever wins the lease; while another instance holds it, it means a
// local walk.
//
// The zero Coordinator is usable: it loads locally (nil Store) with the
// documented defaults, so a missing field never panics or leaves a lease
// without expiry.
type Coordinator struct {
	// Store holds leases and publications. Nil: every load is local.
	Store SnapshotStore
	// LeaseTTL bounds a leader's walk (a crashed leader's lease expires).
	// Zero or negative: DefaultLeaseTTL (a lease never lives forever).
	LeaseTTL time.Duration
	// PublishTTL is how long a publication lives (about the cache TTL).
	// Zero or negative: DefaultPublishTTL.
	PublishTTL time.Duration
	// Wait bounds a loser's wait; zero or negative: no wait, a loser walks
	// the PMS itself at once. Poll is its polling interval; zero or
	// negative: DefaultPoll.
	Wait, Poll time.Duration
	// Log (nil: discard) and Count (nil: none) report fallbacks; Log
	// also gets a warning for each publication refused as forged.
	Log   *slog.Logger
	Count Fallbacks
	// Now is the clock a publication's load time is checked against (one
	// in the future, beyond MaxSkew, is refused). Nil means time.Now.
	Now func() time.Time

	waiting func() // test hook: called when a loser starts polling
}

// Defaults of the Coordinator's zero fields.
const (
	DefaultLeaseTTL   = 30 * time.Second
	DefaultPublishTTL = 30 * time.Second
	DefaultPoll       = 50 * time.Millisecond
)

// orDefault is d when positive, else def.
func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Load returns brand and mode's snapshot, loaded after newerThan.
func (c *Coordinator) Load(ctx context.Context, brand, mode string, newerThan time.Time, load LoadFunc) (Loaded, error) {
	name := SnapKey(brand, mode)
	if c.Store == nil {
		props, at, err := load(ctx)
		return Loaded{Properties: props, LoadedAt: at, Source: SourceLocal}, err
	}
	got, err := c.fetch(ctx, name, newerThan)
	if got != nil {
		return *got, nil
	}
	bad := badPublication(err)
	if err != nil && !bad && !missing(err) {
		return c.local(ctx, name, load, err, false)
	}
	won, err := c.Store.Lease(ctx, name, orDefault(c.LeaseTTL, DefaultLeaseTTL))
	if err != nil {
		return c.local(ctx, name, load, err, false)
	}
	if won {
		// The leader overwrites a corrupt or oversize publication.
		return c.lead(ctx, name, load)
	}
	if bad { // someone else leads; do not wait on a publication we cannot read
		return c.local(ctx, name, load, errors.New("unreadable publication"), false)
	}
	if c.waiting != nil {
		c.waiting()
	}
	deadline := time.NewTimer(max(c.Wait, 0))
	defer deadline.Stop()
	tick := time.NewTicker(orDefault(c.Poll, DefaultPoll))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return Loaded{}, ctx.Err()
		case <-deadline.C:
			return c.local(ctx, name, load, errors.New("no publication in time"), true)
		case <-tick.C:
		}
		got, err := c.fetch(ctx, name, newerThan)
		if got != nil {
			return *got, nil
		}
		if err != nil && !missing(err) {
			return c.local(ctx, name, load, err, false)
		}
		// The leader may have failed (released without publishing) or
		// died (its lease expired): take over rather than wait it out.
		won, err := c.Store.Lease(ctx, name, orDefault(c.LeaseTTL, DefaultLeaseTTL))
		if err != nil {
			return c.local(ctx, name, load, err, false)
		}
		if won {
			// A publication may have landed between the fetch and the lease.
			if got, _ := c.fetch(ctx, name, newerThan); got != nil {
				_ = c.Store.Release(context.WithoutCancel(ctx), name)
				return *got, nil
			}
			return c.lead(ctx, name, load)
		}
	}
}

// lead walks the PMS holding the lease, publishes, and releases the lease.
func (c *Coordinator) lead(ctx context.Context, name string, load LoadFunc) (Loaded, error) {
	defer func() { _ = c.Store.Release(context.WithoutCancel(ctx), name) }()
	l, err := c.walk(ctx, name, load)
	l.Source = SourceLeader
	return l, err
}

// MaxSkew is how far in the future a publication's load time may be
// (clocks of instances differ a little; DECISIONS 15: 5 s).
const MaxSkew = 5 * time.Second

// errFromFuture is a publication whose load time is beyond MaxSkew ahead:
// written with the secret, but not by a walk that has happened (a clock
// far off, or a forgery). It is never used.
var errFromFuture = errors.New("fleet: published snapshot loaded in the future")

// missing: no publication, or none recent enough.
func missing(err error) bool { return errors.Is(err, ErrNotFound) || errors.Is(err, errStale) }

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
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	if limit := now().Add(MaxSkew).UnixMilli(); version > limit {
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
	if at.After(now().Add(MaxSkew)) {
		c.refused(ctx, name, errFromFuture)
		return nil, errFromFuture
	}
	return &Loaded{Properties: props, LoadedAt: at, Source: SourceShared}, nil
}

// refused logs a publication refused as forged (DECISIONS 15).
func (c *Coordinator) refused(ctx context.Context, name string, why error) {
	if c.Log != nil {
		c.Log.WarnContext(ctx, "shared snapshot refused; loading from the PMS", "snapshot", name, "reason", why.Error())
	}
}

// local walks the PMS after a failure of the shared path; publish says
// whether Redis is worth publishing to.
func (c *Coordinator) local(ctx context.Context, name string, load LoadFunc, why error, publish bool) (Loaded, error) {
	if c.Count != nil {
		c.Count.Fallback(ctx, UseSnapshot, why)
	}
	if c.Log != nil {
		c.Log.DebugContext(ctx, "snapshot loads locally", "snapshot", name, "reason", why.Error())
	}
	if !publish {
		props, at, err := load(ctx)
		return Loaded{Properties: props, LoadedAt: at, Source: SourceLocal}, err
	}
	l, err := c.walk(ctx, name, load)
	l.Source = SourceLocal
	return l, err
}

// walk loads from the PMS and publishes (best effort).
func (c *Coordinator) walk(ctx context.Context, name string, load LoadFunc) (Loaded, error) {
	props, at, err := load(ctx)
	if err != nil {
		return Loaded{}, err
	}
	if payload, err := EncodeSnapshot(props, at); err == nil {
		_ = c.Store.Publish(ctx, name, at.UnixMilli(), payload, orDefault(c.PublishTTL, DefaultPublishTTL))
	}
	return Loaded{Properties: props, LoadedAt: at}, nil
}

package events

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// Cursors the edge never issued are refused (docs/contract.md section
// 25): a position past the last walk, a list position (EndOf) at a time
// no walk had, an event position no event has. A position at or before
// the feed's floor is taken as issued: it expired (410), whoever made it.

// ValidAsOf reports whether asOf reads as a list cursor of this feed
// (meta.events.next of a list answer: its format, its mode, a list's
// position); whether the feed issued it is AsOf's check.
func (f *Feed) ValidAsOf(asOf string) bool {
	if n := f.next.Load(); n != nil && n.next == asOf {
		return true // the current snapshot's: the common case, without decoding
	}
	if f.holds.lookupCursor(asOf, time.Time{}) != nil {
		return true // a held one's: compared, not decoded
	}
	p, ok := parseCursor(asOf, f.tag)
	return ok && isListPos(p)
}

// AsOf returns the snapshot the list cursor asOf names, for a page of a
// listing pinned to it (docs/contract.md section 25): the current one, or
// one it replaced less than Hold before at (the request's time: the
// caller has it, and a clock read costs a page more than the rest of the
// lookup; zero: Config.Now) and still held. Errors:
// ErrCursorUnknown when the feed never issued asOf (not ValidAsOf, past
// the last walk, a time no walk had), ErrSnapshotExpired when the
// snapshot is no longer held (or, in a fleet, was never held by this
// member).
func (f *Feed) AsOf(ctx context.Context, asOf string, at time.Time) (*upstream.Snapshot, error) {
	if at.IsZero() {
		at = f.cfg.Now()
	}
	if s := f.holds.lookupCursor(asOf, at); s != nil {
		return s, nil
	}
	p, ok := parseCursor(asOf, f.tag)
	if !ok || !isListPos(p) {
		return nil, ErrCursorUnknown
	}
	if s := f.holds.lookup(p.Walk, at); s != nil {
		return s, nil
	}
	if err := f.issued(ctx, p); err != nil {
		return nil, err
	}
	return nil, ErrSnapshotExpired
}

// HeldStats are the snapshots held for listings beside the current one
// and what they cost in bytes, as reckoned at the last walk.
func (f *Feed) HeldStats() (snapshots int, bytes int64) { return f.holds.stats() }

// issued returns ErrCursorUnknown unless p may be a position this feed
// issued. A fleet member reads the shared feed once before it refuses: a
// cursor another member issued may be newer than its copy. One that
// cannot read it (Redis away, or its position fields refused as forged)
// cannot tell such a cursor from one never issued: Unavailable, to be
// asked again, rather than 422, which would send the partner to list the
// brand again (and a webhook endpoint to be disabled).
func (f *Feed) issued(ctx context.Context, p Pos) error {
	if f.known(p) {
		return nil
	}
	if f.cfg.Shared != nil {
		err := f.sync(ctx)
		if err == nil && f.known(p) {
			return nil
		}
		if err != nil || f.refused.Load() {
			return &upstream.Error{Kind: upstream.Unavailable, RetryAfter: time.Second, Err: errors.Join(errCannotTell, err)}
		}
	}
	return ErrCursorUnknown
}

// errCannotTell: a fleet member could not read the shared feed to check a
// cursor past its copy.
var errCannotTell = errors.New("events: the shared feed cannot be read to check the cursor")

// known reports whether p may be a position this feed issued, as far as
// it knows now. Before the feed started nothing is refused here (the
// answer is 503: not read yet).
func (f *Feed) known(p Pos) bool {
	floor, started := f.log.floorPos()
	switch {
	case !started:
		return true
	case p.Walk > f.lastWalk():
		return false // past the last walk
	case p.Compare(floor) <= 0:
		return true // issued or not, older than what is kept: 410
	case isListPos(p):
		// A fleet member has seen the snapshots it loaded, not every
		// walk of the fleet: any time up to the last walk may be one.
		return f.cfg.Shared != nil || f.holds.made(p.Walk)
	}
	return f.log.has(p)
}

// lastWalk is the last walk the feed knows of: the newest snapshot it
// observed, the shared feed's last walk as last read, or the newest event
// it holds (a feed restored from storage before its first walk).
func (f *Feed) lastWalk() int64 {
	last, _ := f.log.last()
	return max(f.holds.newest.Load(), f.sharedWalk.Load(), last.Walk)
}

// floorPos is the log's floor and whether it is known.
func (l *eventLog) floorPos() (Pos, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.floor, l.started
}

// has reports whether an event at p is held.
func (l *eventLog) has(p Pos) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	i := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].pos.Compare(p) >= 0 })
	return i < len(l.entries) && l.entries[i].pos == p
}

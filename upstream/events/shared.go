package events

import (
	"context"
	"errors"
	"sort"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// Shared is a fleet's one feed (upstream/events/redisevents keeps it in
// Redis): every member appends the walks it makes and reads what any
// member appended, so all answer the same events, ids and order.
type Shared interface {
	// Append records w after the shared feed's last walk, when that is
	// w.Prev (0: the feed does not exist yet, and w starts it) and w.At is
	// newer; ErrConflict otherwise (another member appended meanwhile),
	// nothing written. The changes' positions are (w.At, their index).
	// A feed that is gone (Redis restarted empty) starts again: from
	// w.Prev when it is w.Last (w's changes are its first events, its
	// floor the end of w.Prev), else at w.At, a new baseline. Forged says what the append found that the fleet did
	// not write, and repaired, so that appends go on.
	Append(ctx context.Context, w Walk) (Forged, error)
	// Base returns the shared feed's last walk and, unless it is have,
	// that walk's properties (0 and nil: no feed yet).
	Base(ctx context.Context, have int64) (walk int64, base *upstream.Snapshot, err error)
	// Read returns at most n of the shared feed's events after after,
	// oldest first, with the feed's floor and last walk.
	Read(ctx context.Context, after Pos, n int) (Batch, error)
}

// Forged is what a read or an append of the shared feed found that no
// member wrote with EDGE_FLEET_SECRET (docs/scaling.md, "Who can steer
// the feed"): each is refused, and the feed logs it at ERROR.
type Forged struct {
	// State: the feed's position fields (its last walk, floor, last
	// event...) do not verify. A read takes nothing from them; the next
	// append writes them again from what verifies.
	State bool
	// Events: entries that do not verify, left out.
	Events int
	// Deleted: events the feed's chain names that are gone from it (an
	// entry deleted): a member that did not read them before lacks them.
	Deleted int
	// Stream: entries past the feed's last event (a forged or far-future
	// id), or the stream's last id moved past it, found and removed by an
	// append, so that appends go on.
	Stream int
	// Lost: the feed is gone (Redis restarted empty, or its keys
	// expired): it starts again, and earlier cursors answer 410.
	Lost bool
	// Base: the base (the last walk's properties) does not verify, and
	// the member reading it does not hold that walk: the feed starts again
	// from its walk.
	Base bool
}

// any reports whether f found anything.
func (f Forged) any() bool {
	return f.State || f.Events > 0 || f.Deleted > 0 || f.Stream > 0 || f.Lost || f.Base
}

// ErrConflict is an Append whose Prev is not the shared feed's last walk.
var ErrConflict = errors.New("events: the shared feed moved on")

// ErrForged wraps a Shared error that means what the feed keeps does not
// verify under EDGE_FLEET_SECRET (its base): logged at ERROR.
var ErrForged = errors.New("events: the shared feed holds what no member wrote")

// ErrSharedUnavailable wraps a Shared error that means the shared store
// is away (Redis down, its breaker open, writes refused): the fleet's
// documented fallback, already logged by the store's client, so the feed
// only notes it at debug level.
var ErrSharedUnavailable = errors.New("events: the shared feed is unavailable")

// logShared logs a failed call to the shared feed: at debug level while
// the store is away (ErrSharedUnavailable), a warning otherwise, at most
// once per observability.LogEvery per message (warn).
func (f *Feed) logShared(ctx context.Context, msg string, err error) {
	if errors.Is(err, ErrSharedUnavailable) {
		f.cfg.Log.DebugContext(ctx, msg, "pms", f.cfg.Mode, "error", err)
		return
	}
	f.warn(ctx, msg, "pms", f.cfg.Mode, "error", err)
}

// warn logs msg at WARN at most once per observability.LogEvery: what
// Redis holds (a forged entry stays there) or a failing Redis could
// otherwise repeat it on every read of the shared feed, and a partner's
// requests read it (docs/operations.md, "What to watch"). The line written counts
// those left out.
func (f *Feed) warn(ctx context.Context, msg string, attrs ...any) {
	suppressed, ok := f.throttle.Allow(msg)
	if !ok {
		return
	}
	if suppressed > 0 {
		attrs = append(attrs, "suppressed", suppressed)
	}
	f.cfg.Log.WarnContext(ctx, msg, append(attrs, "repeats_every", observability.LogEvery.String())...)
}

// Walk is one walk's append to the shared feed.
type Walk struct {
	Prev, At int64 // the walk diffed against (0: none) and this one (Unix ms)
	Changes  []Change
	// Snapshot holds the walk's properties: the next walk's base, for
	// whichever member makes it.
	Snapshot *upstream.Snapshot
	// Took is how long the walk ran (zero: not known); a store may keep
	// it (Feed.LastWalk).
	Took time.Duration
	// Floor is the appending member's copy's floor (zero: it has none):
	// an append that writes forged position fields again starts the feed
	// there when nothing in the stream says where it starts.
	Floor Pos
	// Last is the shared feed's last walk as this member last read or
	// appended it (0: none). A feed that is gone resumes from Prev only
	// when it is Last: a member whose base is older may not diff from it
	// for partners whose list was served from a later walk.
	Last int64
	// Restart starts the feed again from this walk, a new baseline (no
	// events, earlier cursors 410), over a base that does not verify
	// (ErrForged) that the member does not hold either: the feed goes on.
	Restart bool
	// Span is the walk's span when the walk was kept (span.go): a store
	// keeps it once for the walk's events and reads it back in
	// Batch.Spans. Zero: none, nothing kept.
	Span trace.SpanContext
}

// Stored is one event as the shared feed keeps it.
type Stored struct {
	Pos  Pos
	Type Type
	Prop string // the property's id
	Data []byte // the property's JSON
}

// Batch is one read of the shared feed.
type Batch struct {
	Events []Stored
	Floor  Pos   // a cursor before it is 410 (zero: the feed does not exist)
	Walk   int64 // the feed's last walk (0: none)
	// Epoch names the feed: a new one (the feed started again, or its
	// position fields were repaired) makes a member read it again from
	// its start.
	Epoch string
	// Through is the position of the last event read, Events' last or one
	// refused after it (zero: none read); Full, that the read took as many
	// as it was asked for (more may wait).
	Through Pos
	Full    bool
	// Forged is what the read refused (Events, Deleted, State).
	Forged Forged
	// Spans are the spans the store kept of the walks Events are of,
	// ascending by walk, at most one per walk (none for a walk kept
	// without one, or whose span the store keeps on an event this read
	// did not return: the copy has it from the read that did).
	Spans []WalkSpan
}

// syncBatch is how many events one read of the shared feed takes.
const syncBatch = 1000

// lead appends a walk this member made to the shared feed: diffed against
// its own copy of the feed's last walk when it has it (the common case: it
// served that walk's snapshot), else against the base the feed keeps.
// Redis failing means no append: the next walk diffs against the same
// base, so its events carry these changes too. A feed that is gone
// (Redis restarted empty) starts again from the walk this member holds
// when that was the feed's last walk it knew: the lists served from it
// keep a cursor that works.
func (f *Feed) lead(ctx context.Context, s *upstream.Snapshot, walk int64, took time.Duration) {
	// Read the feed's last walk first: the snapshot this member served
	// last is then most often that walk, and the diff needs no base read.
	_ = f.sync(ctx)
	if u := f.unsure; u != nil && u.walk == f.sharedWalk.Load() {
		// The append that timed out landed: its walk is the base, held
		// here already (no base of a brand's size to read from Redis, and
		// no conflict on every later append).
		f.base = u
	}
	f.unsure = nil
	if ls := f.lastShared.Load(); ls != nil && (f.base == nil || f.base.walk != f.sharedWalk.Load()) &&
		ls.LoadedAt.UnixMilli() == f.sharedWalk.Load() {
		f.base = &baseline{walk: ls.LoadedAt.UnixMilli(), snap: ls}
	}
	next := &baseline{walk: walk, snap: s}
	for attempt := 0; attempt < 2; attempt++ {
		if f.base == nil || attempt > 0 {
			var have int64
			if f.base != nil && attempt == 0 {
				have = f.base.walk
			} // after a conflict, the base in full: it names its own walk
			bw, base, err := f.cfg.Shared.Base(ctx, have)
			if errors.Is(err, ErrForged) && f.base == nil {
				// Nobody can diff against a base that does not verify: a
				// new baseline, so that the feed goes on.
				f.alarm(ctx, Forged{Base: true})
				forged, err := f.cfg.Shared.Append(ctx, Walk{At: walk, Snapshot: s, Restart: true})
				f.alarm(ctx, forged)
				if err == nil {
					f.base = next
					f.sharedWalk.Store(walk)
				}
				return
			}
			if err != nil {
				f.logShared(ctx, "events: the stored feed's base (Redis, or EDGE_DATA_DIR) could not be read; this walk makes no events, the next one reports its changes", err)
				return
			}
			if bw != 0 && bw != have {
				f.base = &baseline{walk: bw, snap: base}
			}
		}
		w := Walk{At: walk, Snapshot: s, Took: took, Last: f.sharedWalk.Load(), Span: spanOf(ctx)}
		w.Floor, _ = f.log.floorOf()
		if f.base != nil {
			if walk <= f.base.walk {
				return // older than the feed's last walk: the feed has it all
			}
			w.Prev, w.Changes = f.base.walk, Diff(f.base.snap, s)
		}
		forged, err := f.cfg.Shared.Append(ctx, w)
		f.alarm(ctx, forged)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			f.logShared(ctx, "events: the walk's changes could not be stored (Redis, or EDGE_DATA_DIR); the next walk reports them", err)
			f.unsure = next // unless it landed all the same: the next walk's sync tells
			return
		}
		f.base = next
		f.sharedWalk.Store(walk)
		f.metrics.published(w.Changes)
		if _, ok := f.cfg.Shared.(SoleWriter); ok {
			f.keep(walk, w.Changes, w.Span)
		}
		return
	}
	// Two conflicts in a row: the feed moved under this member twice (or
	// its view of it could not be read). Said, not silent: the next walk
	// diffs from the feed's last and carries these changes.
	f.warn(ctx, "events: the walk's changes conflicted twice with the shared feed; the next walk reports them",
		"pms", f.cfg.Mode, "walk", time.UnixMilli(walk).UTC())
}

// SoleWriter is a Shared that only this process appends to (a single
// edge's file, upstream/events/boltevents): a walk it appended is added to
// the in-memory log as it was written instead of being read back, which
// would inflate and copy a walk's events a second time.
type SoleWriter interface {
	Shared
	SoleWriter()
}

// keep adds the changes of walk, just appended, to the log, with the
// walk's span sc (zero: none), but those a read of the feed already
// brought in.
func (f *Feed) keep(walk int64, changes []Change, sc trace.SpanContext) {
	f.syncMu.Lock()
	defer f.syncMu.Unlock()
	last, started := f.log.last()
	if !started {
		return // the next read brings the feed in, these events with it
	}
	from := 0 // changes[k] is at (walk, k): those up to last are in
	switch {
	case last.Walk > walk:
		from = len(changes)
	case last.Walk == walk:
		from = min(int(last.Seq)+1, len(changes))
	}
	bt, cost := newBatch(walk, changes[from:])
	f.log.reserve(len(changes)-from, cost, f.cfg.Now())
	for k := from; k < len(changes); k++ {
		c := changes[k]
		bt.add(f.tag, Pos{Walk: walk, Seq: uint32(k)}, c.Type, c.Item.ID, c.Item.JSON)
	}
	if len(bt.es) > 0 {
		bt.span(walk, sc)
	}
	f.log.add(bt.entries(), bt.spans, f.cfg.Now())
	f.appended(len(bt.es))
}

// sync reads what the shared feed holds beyond this member's copy. A new
// epoch of the feed (it started again, or its position fields were
// written again) replaces the copy: read again from the feed's floor.
func (f *Feed) sync(ctx context.Context) error {
	f.syncMu.Lock()
	defer f.syncMu.Unlock()
	after, _ := f.log.last()
	for {
		b, err := f.cfg.Shared.Read(ctx, after, syncBatch)
		if err != nil {
			return err
		}
		f.alarm(ctx, b.Forged)
		f.refused.Store(b.Forged.State)
		if b.Walk == 0 { // no shared feed (yet, or gone), or its state refused: keep the copy
			if !b.Forged.State && f.epoch != "" {
				f.alarm(ctx, Forged{Lost: true})
				f.epoch = ""
			}
			f.synced.Store(f.cfg.Now().UnixNano())
			return nil
		}
		if b.Epoch != f.epoch {
			f.epoch = b.Epoch
			f.log.restart(b.Floor)
			if after != b.Floor {
				after = b.Floor
				continue
			}
		}
		bt := batch{es: make([]entry, 0, len(b.Events))}
		k := 0 // where the next event's walk's span is looked for in b.Spans
		for _, st := range b.Events {
			if st.Pos.Compare(after) > 0 && st.Pos.Compare(b.Floor) > 0 {
				bt.add(f.tag, st.Pos, st.Type, st.Prop, st.Data)
				var sc trace.SpanContext
				sc, k = spanAt(b.Spans, k, st.Pos.Walk)
				bt.span(st.Pos.Walk, sc)
				after = st.Pos
			}
		}
		f.log.forget(b.Floor)
		f.log.add(bt.entries(), bt.spans, f.cfg.Now())
		f.appended(len(bt.es))
		f.sharedWalk.Store(b.Walk)
		if !b.Full || b.Through.Compare(after) <= 0 && len(bt.es) == 0 {
			f.synced.Store(f.cfg.Now().UnixNano())
			return nil
		}
		after = max2(after, b.Through)
	}
}

func max2(a, b Pos) Pos {
	if a.Compare(b) >= 0 {
		return a
	}
	return b
}

// freshen makes sure a partner reads a recent copy of the shared feed:
// until the copy has its floor (the first read, or the feed's first walk)
// each request reads it, bounded by its deadline; later ones are answered
// from the copy while a stale one (older than SyncEvery) is read again in
// the background.
func (f *Feed) freshen(ctx context.Context) {
	if !f.log.isStarted() {
		if err := f.sync(ctx); err != nil {
			f.cfg.Log.DebugContext(ctx, "events: the shared feed could not be read", "pms", f.cfg.Mode, "error", err)
		}
		return
	}
	if f.cfg.Now().UnixNano()-f.synced.Load() < int64(f.cfg.SyncEvery) || !f.syncing.CompareAndSwap(false, true) {
		return
	}
	f.closeMu.Lock()
	defer f.closeMu.Unlock()
	if f.closed {
		f.syncing.Store(false)
		return
	}
	f.wg.Go(func() {
		defer f.syncing.Store(false)
		if err := f.sync(f.bg); err != nil {
			f.cfg.Log.Debug("events: the shared feed could not be read", "pms", f.cfg.Mode, "error", err)
		}
	})
}

// floorOf is the log's floor, if known.
func (l *eventLog) floorOf() (Pos, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.floor, l.started
}

// forget drops the entries at or before p and raises the floor to p: the
// shared feed's floor, below which it holds nothing, so a page never
// serves what the feed no longer has (the events before Redis lost the
// feed, among them).
func (l *eventLog) forget(p Pos) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].pos.Compare(p) > 0 })
	if k > 0 {
		for i := range k {
			l.bytes -= l.entries[i].cost() // else the bound, still counting them, drops every later event
		}
		clear(l.entries[:k])
		l.entries = l.entries[k:]
		l.compactHead()
	}
	l.dropSpans()
	l.raiseLocked(p)
}

// restart empties the log for a new epoch of the shared feed whose floor
// is p (lower than the old one, it may be).
func (l *eventLog) restart(p Pos) {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.entries)
	l.entries, l.spans, l.floor, l.started, l.bytes = nil, nil, p, true, 0
}

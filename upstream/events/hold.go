package events

import (
	"errors"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// DefaultHold is how long a replaced snapshot stays held for listings
// pinned to it (EDGE_LIST_HOLD, docs/operations.md).
const DefaultHold = 15 * time.Minute

// ErrSnapshotExpired is an asOf naming a snapshot this member no longer
// holds (or never held): 410 LIST_SNAPSHOT_EXPIRED, the partner lists
// again from page 1 (docs/contract.md section 25).
var ErrSnapshotExpired = errors.New("events: the listing's snapshot is no longer held")

// maxWalks bounds the walks a feed remembers to tell a position no walk
// made (8 bytes each): at one walk every 30 s, three weeks of them. Below
// the oldest remembered (forgotten, or from before this process started
// with a feed kept elsewhere), a position is taken as issued.
const maxWalks = 1 << 16

// held is a replaced snapshot kept for the listings pinned to it.
type held struct {
	view       *upstream.Snapshot // Snapshot.Held: the references to its items
	walk       int64
	cursor     string // its list cursor, encoded once: a page's asOf is compared, not decoded
	replacedAt time.Time
}

// holds are the snapshots a listing may be pinned to (docs/contract.md
// section 25): the current one and the ones it replaced, each for hold
// after it was replaced, while together they cost no more than the
// current one (Snapshot.Bytes: a held one costs its references and the
// versions of items only the held ones still have; the others are the
// current snapshot's, upstream.SnapshotAfter). Also the walks seen, to
// tell a position no walk made. Safe for concurrent use.
type holds struct {
	hold time.Duration
	log  *slog.Logger
	mode string
	tag  byte // the feed's cursors'

	mu      sync.Mutex // replace and stats; lookups take none
	cur     *upstream.Snapshot
	curWalk int64
	held    []held // oldest first
	bytes   int64  // what held costs, as last reckoned

	wmu   sync.Mutex // walks: apart from mu, so that a cursor's check never waits for a walk's reckoning
	walks []int64    // the walks seen, ascending, at most maxWalks
	// newest is the last of walks (0: none), read without mu.
	newest atomic.Int64
	// now is cur and held as a list page reads them, without mu: a copy
	// published after each change.
	now atomic.Pointer[holdView]
}

// holdView is what lookup reads: the current snapshot and the held ones.
type holdView struct {
	cur     *upstream.Snapshot
	curWalk int64
	held    []held
}

// replace makes s the current snapshot: the one it replaces is held from
// now. The held ones past their hold go, and the oldest while they cost
// more than s.
func (h *holds) replace(s *upstream.Snapshot, now time.Time) {
	walk := s.LoadedAt.UnixMilli()
	h.saw(walk)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == s {
		return
	}
	if h.cur != nil && h.curWalk != walk {
		h.held = slices.DeleteFunc(h.held, func(x held) bool { return x.walk == h.curWalk })
		h.held = append(h.held, held{view: h.cur.Held(), walk: h.curWalk, replacedAt: now,
			cursor: string(appendCursor(nil, h.tag, EndOf(h.curWalk)))})
	}
	h.cur, h.curWalk = s, walk
	h.expire(now)
	h.reckon()
	h.publish()
}

// publish makes the current and held snapshots lookup's; mu held.
func (h *holds) publish() {
	h.now.Store(&holdView{cur: h.cur, curWalk: h.curWalk, held: slices.Clone(h.held)})
}

// saw records walk among the walks seen.
func (h *holds) saw(walk int64) {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	i, found := slices.BinarySearch(h.walks, walk)
	if found {
		return
	}
	h.walks = slices.Insert(h.walks, i, walk)
	if len(h.walks) > maxWalks {
		h.walks = slices.Delete(h.walks, 0, len(h.walks)-maxWalks)
	}
	h.newest.Store(h.walks[len(h.walks)-1])
}

// expire drops the held snapshots past their hold; mu held.
func (h *holds) expire(now time.Time) {
	k := 0
	for k < len(h.held) && !now.Before(h.held[k].replacedAt.Add(h.hold)) {
		k++
	}
	if k > 0 {
		clear(h.held[:k])
		h.held = h.held[k:]
	}
}

// reckon sums what the held snapshots cost, newest first (an old version
// of an item counted once, in the newest that has it), and drops the
// oldest from the first whose cost passes the current snapshot's; mu
// held.
func (h *holds) reckon() {
	budget := h.cur.Bytes()
	counted := map[*upstream.Item]struct{}{}
	cur := h.cur.Active
	var total int64
	for i := len(h.held) - 1; i >= 0; i-- {
		cost := int64(len(h.held[i].view.Active)) * 8
		for k, it := range h.held[i].view.Active {
			// The lists are mostly in step: the same item at the same
			// place is the current one's, without a lookup.
			if k < len(cur) && cur[k] == it {
				continue
			}
			if c, ok := h.cur.Get(it.ID); ok && c == it {
				continue
			}
			if _, dup := counted[it]; !dup {
				counted[it] = struct{}{}
				cost += upstream.ItemBytes(it)
			}
		}
		if total+cost > budget {
			h.log.Debug("events: held snapshots dropped early: they would cost more than the current one",
				"pms", h.mode, "dropped", i+1, "held_bytes", total, "current_bytes", budget)
			clear(h.held[:i+1])
			h.held = h.held[i+1:]
			break
		}
		total += cost
	}
	h.bytes = total
}

// lookup returns the snapshot of walk, the current one or one held less
// than hold ago, or nil. It takes no lock: list pages read it. (A held
// snapshot past its hold is dropped from memory at the next walk.)
func (h *holds) lookup(walk int64, now time.Time) *upstream.Snapshot {
	v := h.now.Load()
	if v == nil {
		return nil
	}
	if v.curWalk == walk {
		return v.cur
	}
	for _, x := range v.held {
		if x.walk == walk && now.Before(x.replacedAt.Add(h.hold)) {
			return x.view
		}
	}
	return nil
}

// lookupCursor returns the held snapshot whose list cursor is asOf, held
// less than hold before at, or nil; any held one when at is zero. The
// cursors are compared as strings: no decoding.
func (h *holds) lookupCursor(asOf string, at time.Time) *upstream.Snapshot {
	v := h.now.Load()
	if v == nil {
		return nil
	}
	for i := len(v.held) - 1; i >= 0; i-- { // the newest first: a listing most often reads the last replaced
		if x := &v.held[i]; x.cursor == asOf {
			if at.IsZero() || at.Before(x.replacedAt.Add(h.hold)) {
				return x.view
			}
			return nil
		}
	}
	return nil
}

// made reports whether a walk at walk may have been made: one of the
// walks remembered, or older than all of them.
func (h *holds) made(walk int64) bool {
	h.wmu.Lock()
	defer h.wmu.Unlock()
	_, found := slices.BinarySearch(h.walks, walk)
	return found || len(h.walks) == 0 || walk < h.walks[0]
}

// stats are the held snapshots and what they cost, as last reckoned.
func (h *holds) stats() (int, int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.held), h.bytes
}

// isListPos reports whether p is a list answer's position (EndOf).
func isListPos(p Pos) bool { return p.Seq == math.MaxUint32 }

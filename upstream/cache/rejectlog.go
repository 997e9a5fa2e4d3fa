package cache

import (
	"context"
	"log/slog"
	"sync"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// NewRejectionsPerWalk caps the WARN lines of one walk for records it
// rejects that the previous walk did not (docs/operations.md, "What to watch"):
// a PMS change that breaks records shows a few of them at once, and the
// walk's own line counts them all (rejected_new).
const NewRejectionsPerWalk = 5

// rejectLog logs the PMS records the mapping rejects, sized for a brand
// of 50,000 hotels whose PMS holds thousands of unmappable records on
// every walk: each rejection is a DEBUG line; at WARN, only a record the
// previous walk did not reject (none on the process's first walk, which
// has nothing to tell new ones from), at most NewRejectionsPerWalk per walk;
// the walk's line (walked) counts them by reason with a few ids. A
// rejection outside a walk (a get by id while no snapshot exists) is a
// WARN line at most once per observability.LogEvery per reason.
type rejectLog struct {
	log      *slog.Logger
	throttle observability.Throttle // rejections outside a walk, by reason

	mu        sync.Mutex
	walk      *upstream.WalkStats // the walk cur is of; nil: none yet
	prev, cur map[string]struct{} // ids the previous walk and this one rejected
	warned    int                 // WARN lines of this walk
}

// rejected logs r, rejected under ctx.
func (l *rejectLog) rejected(ctx context.Context, r *mapping.Rejection) {
	l.log.DebugContext(ctx, "pms record rejected", "hotel_id", r.HotelID, "reason", string(r.Reason))
	st := upstream.WalkStatsFrom(ctx)
	if st == nil {
		if suppressed, ok := l.throttle.Allow(string(r.Reason)); ok {
			l.log.WarnContext(ctx, "pms record rejected", "hotel_id", r.HotelID, "reason", string(r.Reason),
				"suppressed", suppressed, "repeats_every", observability.LogEvery.String())
		}
		return
	}
	if !l.newlyRejected(st, r.HotelID) {
		return
	}
	st.MarkNew()
	l.log.WarnContext(ctx, "pms record newly rejected: the previous walk mapped it or did not see it",
		"hotel_id", r.HotelID, "reason", string(r.Reason), "at_most_per_walk", NewRejectionsPerWalk)
}

// newlyRejected notes id as rejected by the walk st and reports whether a
// WARN line is due: there was a previous walk, it did not reject id, and
// this walk has written fewer than NewRejectionsPerWalk (past that, id is
// only counted). The walks of one cache do
// not overlap: a WalkStats other than the last seen starts the next walk.
func (l *rejectLog) newlyRejected(st *upstream.WalkStats, id string) (warn bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st != l.walk {
		if l.walk != nil {
			l.prev = l.cur
		}
		l.walk, l.cur, l.warned = st, make(map[string]struct{}, len(l.prev)), 0
	}
	l.cur[id] = struct{}{}
	if _, known := l.prev[id]; known || l.prev == nil {
		return false // known, or the process's first walk: nothing to tell it from
	}
	if l.warned >= NewRejectionsPerWalk {
		st.MarkNew()
		return false
	}
	l.warned++
	return true
}

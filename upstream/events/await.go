package events

import (
	"context"
	"time"
)

// awaitSharedMax bounds how long a fleet member waits for the shared feed
// to hold a walk another member published: the walker appends it right
// after publishing (a diff and one write to Redis); a walker that died
// in between, or whose append failed, leaves the walk to the next one,
// whose events carry its changes.
const awaitSharedMax = 10 * time.Second

// awaitShared holds back a snapshot of walk, taken from another member's
// publication, until this member's copy of the shared feed holds that
// walk (or awaitSharedMax passes, or ctx ends). The publication reaches
// the fleet before the walker's append does; served at once, the snapshot
// would hand out list cursors of a walk whose events no member can serve
// yet, and a partner catching up on this member would stop short of the
// list it then compares with (docs/contract.md section 25: after catching
// up, the copy equals the list of the snapshot the feed reached). Loads
// run off the request path (walks follow the clock), so nobody waits but
// the load; partners keep the previous snapshot meanwhile.
func (f *Feed) awaitShared(ctx context.Context, walk int64) {
	wait := 20 * time.Millisecond
	deadline := time.NewTimer(awaitSharedMax)
	defer deadline.Stop()
	for f.sharedWalk.Load() < walk {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-deadline.C:
			t.Stop()
			f.warn(ctx, "events: the shared feed does not hold the walk another member published; serving it all the same, the next walk's events carry its changes",
				"pms", f.cfg.Mode, "walk", time.UnixMilli(walk).UTC(), "waited", awaitSharedMax.String())
			return
		case <-t.C:
		}
		wait = min(2*wait, 500*time.Millisecond)
		_ = f.sync(ctx)
	}
}

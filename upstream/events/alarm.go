package events

import (
	"context"
	"sync"
	"time"
)

// The feed's alarms: what it found in the shared feed that no member
// wrote (Forged), logged at ERROR at most once a minute per cause, each
// line counting what was found since the line before, and every one
// counted by the refused metric (docs/scaling.md, "Who can steer the
// feed").
const alarmEvery = time.Minute

// alarmCauses are the causes, their lines and what of a Forged they
// count; cause is the log's and the metric's label.
var alarmCauses = [...]struct {
	cause, msg string
	n          func(Forged) int
}{
	{"state", "events: the shared feed's position fields do not verify (EDGE_FLEET_SECRET): refused; the next walk writes them again",
		func(f Forged) int { return one(f.State) }},
	{"event", "events: events of the shared feed do not verify (EDGE_FLEET_SECRET): refused",
		func(f Forged) int { return f.Events }},
	{"deleted", "events: events were deleted from the shared feed: a member that had not read them lacks them",
		func(f Forged) int { return f.Deleted }},
	{"stream", "events: stream entries past the shared feed's last event (a forged or far-future id) removed",
		func(f Forged) int { return f.Stream }},
	{"lost", "events: the shared feed is gone (Redis restarted empty, or its keys expired): it starts again, earlier cursors answer 410",
		func(f Forged) int { return one(f.Lost) }},
	{"base", "events: the shared feed's base does not verify (EDGE_FLEET_SECRET) and this member does not hold it: the feed starts again from this walk",
		func(f Forged) int { return one(f.Base) }},
}

func one(b bool) int {
	if b {
		return 1
	}
	return 0
}

// alarms are a feed's alarm state, per cause (alarmCauses' order).
type alarms struct {
	mu  sync.Mutex
	per [len(alarmCauses)]struct {
		last    time.Time // the last line; zero: none yet
		pending int       // found since
	}
}

// alarm logs and counts what fg found (nothing when it found nothing).
func (f *Feed) alarm(ctx context.Context, fg Forged) {
	if !fg.any() {
		return
	}
	now := f.cfg.Now()
	f.alarms.mu.Lock()
	defer f.alarms.mu.Unlock()
	for i, c := range alarmCauses {
		n := c.n(fg)
		if n == 0 {
			continue
		}
		f.metrics.forged(c.cause, n)
		a := &f.alarms.per[i]
		a.pending += n
		if !a.last.IsZero() && now.Sub(a.last) < alarmEvery {
			continue
		}
		f.cfg.Log.ErrorContext(ctx, c.msg, "pms", f.cfg.Mode, "cause", c.cause, "count", a.pending)
		a.last, a.pending = now, 0
	}
}

package events

import (
	"context"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// LastWalk is the length of the last load that made a new snapshot, by
// the feed's clock (a partner waiting for a first walk is told about how
// long it has left); zero before any, and a load that returns the
// snapshot already seen does not change it.
func TestFeedLastWalk(t *testing.T) {
	c := &clock{t0}
	f := newFeed(t, c, Config{})
	if d := f.LastWalk(); d != 0 {
		t.Errorf("before any walk: %v; want 0", d)
	}
	s := snap(t0, prop(1, "A", "active"))
	load := func(took time.Duration) Loader {
		return f.Watch(func(context.Context) (*upstream.Snapshot, error) {
			c.now = c.now.Add(took)
			return s, nil
		})
	}
	if _, err := load(7 * time.Second)(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := f.LastWalk(); d != 7*time.Second {
		t.Errorf("after a walk of 7s: %v", d)
	}
	_, _ = load(time.Millisecond)(context.Background()) // the same snapshot: no walk
	if d := f.LastWalk(); d != 7*time.Second {
		t.Errorf("after a load that made no new snapshot: %v; want 7s still", d)
	}
	s = snap(t0.Add(time.Minute), prop(1, "A2", "active"))
	_, _ = load(2 * time.Second)(context.Background())
	if d := f.LastWalk(); d != 2*time.Second {
		t.Errorf("after a walk of 2s: %v", d)
	}
	if d := (*Feed)(nil).LastWalk(); d != 0 {
		t.Errorf("a nil feed: %v", d)
	}
}

package events

import (
	"testing"
	"testing/synctest"
	"time"
)

// A fleet member serves a walk another member published only once its
// copy of the shared feed holds that walk's events: the publication
// reaches it before the walker's append does, and a partner catching up on
// it must reach the walk of the list it is then served (docs/contract.md
// section 25). A walker that never appends holds it back at most
// awaitSharedMax.
func TestSharedFeedServesAnotherMembersWalkOnceTheFeedHoldsIt(t *testing.T) {
	walk0 := snap(t0, prop(1, "A", "active"))
	walk1 := snap(t0.Add(time.Minute), prop(1, "A2", "active"), prop(2, "B", "active"))

	t.Run("the walker appends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := &clock{walk1.LoadedAt}
			sh := &memShared{}
			walker, other := newMember(t, c, sh), newMember(t, c, sh)
			walker.leads(t, walk0)
			other.takes(t, walk0)

			served := make(chan struct{})
			go func() { other.takes(t, walk1); close(served) }() // published, not appended yet
			synctest.Wait()
			select {
			case <-served:
				t.Fatal("the member served walk 1 before the shared feed held it")
			default:
			}
			walker.leads(t, walk1)
			<-served
			if last, _ := other.f.log.last(); last.Walk != walk1.LoadedAt.UnixMilli() {
				t.Errorf("served walk 1 with its copy of the feed at %v; want walk 1's events in it", last)
			}
		})
	})

	t.Run("the walker never appends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := &clock{walk1.LoadedAt}
			sh := &memShared{}
			walker, other := newMember(t, c, sh), newMember(t, c, sh)
			walker.leads(t, walk0)
			other.takes(t, walk0)

			start := time.Now()
			other.takes(t, walk1)
			if waited := time.Since(start); waited != awaitSharedMax {
				t.Errorf("held walk 1 back %v; want %v, then served", waited, awaitSharedMax)
			}
			if got := other.f.lastWalk(); got != walk1.LoadedAt.UnixMilli() {
				t.Errorf("last walk %d; want walk 1 (%d) served", got, walk1.LoadedAt.UnixMilli())
			}
		})
	})
}

package fleet

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// A corrupt publication with nobody leading is overwritten by the instance
// that wins the lease: the next instance takes the good one from Redis.
func TestCoordinatorLeaderOverwritesCorruptPublication(t *testing.T) {
	eachForm(t, func(t *testing.T, f form) {
		client := f.client(t)
		name := SnapKey("acme", "live")
		if err := NewStore(client, 0, testSecret).Publish(t.Context(), name, loadedAt.UnixMilli(), []byte("garbage!!!"), time.Minute); err != nil {
			t.Fatal(err)
		}
		p := &pms{}
		a := newCoordinator(NewStore(client, 0, testSecret))
		if l, err := a.Load(t.Context(), "acme", "live", time.Time{}, p.load); err != nil || l.Source != SourceLeader {
			t.Fatalf("first load over a corrupt publication: %v, %v; want the leader's walk", l.Source, err)
		}
		b := newCoordinator(NewStore(client, 0, testSecret))
		if l, err := b.Load(t.Context(), "acme", "live", time.Time{}, p.load); err != nil || l.Source != SourceShared || p.walks.Load() != 1 {
			t.Fatalf("second load: %v, %v, walks %d; want the overwritten publication", l.Source, err, p.walks.Load())
		}
	})
}

// A leader whose walk fails releases the lease without publishing; the
// instance waiting for it takes the lease over and walks at once instead
// of waiting out Wait.
func TestCoordinatorLoserTakesOverFailedLeader(t *testing.T) {
	eachForm(t, func(t *testing.T, f form) {
		client := f.client(t)
		leader := newCoordinator(NewStore(client, 0, testSecret))
		loser := newCoordinator(NewStore(client, 0, testSecret))
		loser.Wait = time.Minute // a give-up would fail the test's deadline
		var logs testkit.LogBuffer
		loser.Log = slog.New(slog.NewJSONHandler(&logs, nil))
		fail := make(chan struct{})
		loser.waiting = func() { close(fail) }
		failing := func(ctx context.Context) ([]mapping.Property, time.Time, error) {
			<-fail
			return nil, time.Time{}, errors.New("pms down")
		}
		leaderErr := make(chan error, 1)
		leaseTaken := make(chan struct{})
		go func() {
			_, err := leader.Load(t.Context(), "acme", "live", time.Time{}, func(ctx context.Context) ([]mapping.Property, time.Time, error) {
				close(leaseTaken)
				return failing(ctx)
			})
			leaderErr <- err
		}()
		<-leaseTaken
		p := &pms{}
		l, err := loser.Load(t.Context(), "acme", "live", time.Time{}, p.load)
		if err != nil || l.Source != SourceLeader || p.walks.Load() != 1 {
			t.Fatalf("after the leader failed: %v, %v, walks %d; want a takeover walk", l.Source, err, p.walks.Load())
		}
		if err := <-leaderErr; err == nil {
			t.Fatal("the failing leader reported no error")
		}
		// The member says it took the walk over (docs/operations.md, "What to watch").
		if !strings.Contains(logs.String(), `"level":"INFO","msg":"walk taken over`) {
			t.Errorf("no takeover line:\n%s", logs.String())
		}
	})
}

package fleet

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

var loadedAt = time.UnixMilli(1_800_000_000_000).UTC()

func props() []mapping.Property {
	code := "ACME1"
	return []mapping.Property{
		{ID: "0f8fad5b-d9cb-469f-a165-70867728950e", Name: "Acme Berlin", Code: &code, Status: mapping.StatusActive,
			Timezone: "Europe/Berlin", CreatedAt: loadedAt.Add(-time.Hour), UpdatedAt: loadedAt.Add(-time.Minute)},
		{ID: "7c9e6679-7425-40de-944b-e07fc1f90ae7", Name: "Acme Paris", Status: mapping.StatusInactive,
			Timezone: "Europe/Paris", CreatedAt: loadedAt.Add(-2 * time.Hour), UpdatedAt: loadedAt.Add(-2 * time.Hour)},
	}
}

// pms counts walks.
type pms struct {
	walks atomic.Int64
	gate  chan struct{} // when set, a walk waits for it
}

func (p *pms) load(ctx context.Context) ([]mapping.Property, time.Time, error) {
	p.walks.Add(1)
	if p.gate != nil {
		select {
		case <-p.gate:
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		}
	}
	return props(), loadedAt, nil
}

func newCoordinator(store SnapshotStore) *Coordinator {
	return &Coordinator{Store: store, LeaseTTL: 10 * time.Second, PublishTTL: time.Minute, Wait: 5 * time.Second, Poll: 5 * time.Millisecond,
		Now: func() time.Time { return loadedAt.Add(time.Minute) }} // the tests' walks load at loadedAt
}

func TestCodecRoundTrip(t *testing.T) {
	b, err := EncodeSnapshot(props(), loadedAt)
	if err != nil {
		t.Fatal(err)
	}
	got, at, err := DecodeSnapshot(b)
	if err != nil || !at.Equal(loadedAt) || len(got) != 2 || *got[0].Code != "ACME1" || got[1].Code != nil ||
		!got[0].UpdatedAt.Equal(props()[0].UpdatedAt) || got[1].Status != mapping.StatusInactive {
		t.Fatalf("round trip: %+v at %v, %v", got, at, err)
	}
	for _, bad := range [][]byte{nil, {2}, append([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0}, "not gzip"...), b[:len(b)-4]} {
		if _, _, err := DecodeSnapshot(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeSnapshot(%q): %v, want ErrCorrupt", bad, err)
		}
	}
	p := props()
	p[0].ID = "not-an-id"
	b, _ = EncodeSnapshot(p, loadedAt)
	if _, _, err := DecodeSnapshot(b); !errors.Is(err, ErrCorrupt) {
		t.Errorf("invalid record: %v, want ErrCorrupt", err)
	}
}

func TestCoordinatorsRacingMakeOneWalk(t *testing.T) {
	eachForm(t, func(t *testing.T, f form) {
		p := &pms{gate: make(chan struct{})}
		a := newCoordinator(NewStore(f.client(t), 0, testSecret))
		b := newCoordinator(NewStore(f.client(t), 0, testSecret))
		b.waiting = func() { close(p.gate) } // the leader's walk ends once b waits
		a.waiting = b.waiting

		type res struct {
			l   Loaded
			err error
		}
		results := make(chan res, 2)
		for _, c := range []*Coordinator{a, b} {
			go func() {
				l, err := c.Load(t.Context(), "acme", "live", time.Time{}, p.load)
				results <- res{l, err}
			}()
		}
		sources := map[Source]int{}
		for range 2 {
			r := <-results
			if r.err != nil || len(r.l.Properties) != 2 || !r.l.LoadedAt.Equal(loadedAt) {
				t.Fatalf("load: %+v, %v", r.l, r.err)
			}
			sources[r.l.Source]++
		}
		if p.walks.Load() != 1 || sources[SourceLeader] != 1 || sources[SourceShared] != 1 {
			t.Fatalf("walks %d, sources %v; want one walk, one leader, one shared", p.walks.Load(), sources)
		}
		// A third instance later takes the publication without a walk or lease.
		c := newCoordinator(NewStore(f.client(t), 0, testSecret))
		l, err := c.Load(t.Context(), "acme", "live", loadedAt.Add(-time.Second), p.load)
		if err != nil || l.Source != SourceShared || p.walks.Load() != 1 {
			t.Fatalf("late instance: %v, %v, walks %d", l.Source, err, p.walks.Load())
		}
		// One asking for something newer than the publication leads a walk.
		if l, _ := c.Load(t.Context(), "acme", "live", loadedAt, p.load); l.Source != SourceLeader || p.walks.Load() != 2 {
			t.Fatalf("newer wanted: %v, walks %d", l.Source, p.walks.Load())
		}
	})
}

func TestCoordinatorRedisDownLoadsLocally(t *testing.T) {
	srv := redistest.Start(t)
	tl := testkit.NewTelemetry(t)
	client := newTestClient(t, srv.URL(), tl, nil)
	c := newCoordinator(NewStore(client, 0, testSecret))
	c.Count = client
	srv.Stop()
	p := &pms{}
	l, err := c.Load(t.Context(), "acme", "live", time.Time{}, p.load)
	if err != nil || l.Source != SourceLocal || len(l.Properties) != 2 || p.walks.Load() != 1 {
		t.Fatalf("Redis down: %+v, %v, walks %d", l, err, p.walks.Load())
	}
	if got := tl.Counter(t, "partner_edge.redis.fallbacks", "use", "snapshot"); got != 1 {
		t.Fatalf("snapshot fallbacks %d, want 1", got)
	}
}

func TestCoordinatorBadPublicationLoadsLocally(t *testing.T) {
	srv := redistest.Start(t)
	client := newTestClient(t, srv.URL(), nil, nil)
	other := NewStore(client, 0, testSecret)
	name := SnapKey("acme", "live")
	for _, tc := range []struct {
		what    string
		payload []byte
		max     int
	}{
		{"corrupt", []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0},
		{"oversize", make([]byte, 2048), 1024},
	} {
		srv.Flush()
		if err := other.Publish(t.Context(), name, loadedAt.UnixMilli(), tc.payload, time.Minute); err != nil {
			t.Fatal(err)
		}
		if won, err := other.Lease(t.Context(), name, time.Minute); !won || err != nil {
			t.Fatalf("lease: %v, %v", won, err)
		}
		p := &pms{}
		c := newCoordinator(NewStore(client, tc.max, testSecret))
		l, err := c.Load(t.Context(), "acme", "live", time.Time{}, p.load)
		if err != nil || l.Source != SourceLocal || p.walks.Load() != 1 {
			t.Fatalf("%s publication: %v, %v, walks %d; want a local walk", tc.what, l.Source, err, p.walks.Load())
		}
	}
}

// fakeStore: the lease is always held elsewhere and nothing is published.
type fakeStore struct{ fetches atomic.Int64 }

func (f *fakeStore) Lease(context.Context, string, time.Duration) (bool, error) { return false, nil }
func (f *fakeStore) Release(context.Context, string) error                      { return nil }
func (f *fakeStore) Publish(context.Context, string, int64, []byte, time.Duration) error {
	return nil
}
func (f *fakeStore) Fetch(context.Context, string) ([]byte, int64, time.Time, error) {
	f.fetches.Add(1)
	return nil, 0, time.Time{}, ErrNotFound
}

func TestCoordinatorLoserGivesUpAfterWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &fakeStore{}
		c := &Coordinator{Store: store, LeaseTTL: time.Second, PublishTTL: time.Minute, Wait: 2 * time.Second, Poll: 100 * time.Millisecond}
		p := &pms{}
		start := time.Now()
		l, err := c.Load(t.Context(), "acme", "live", time.Time{}, p.load)
		if err != nil || l.Source != SourceLocal || p.walks.Load() != 1 {
			t.Fatalf("%v, %v, walks %d", l.Source, err, p.walks.Load())
		}
		if d := time.Since(start); d != 2*time.Second {
			t.Fatalf("gave up after %v, want Wait (2s)", d)
		}
		if n := store.fetches.Load(); n < 15 || n > 21 {
			t.Fatalf("%d fetches, want about one per Poll", n)
		}
	})
}

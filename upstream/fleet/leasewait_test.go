package fleet

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
)

// clockStore is a SnapshotStore whose lease is another member's until
// leaseFree and whose publication appears at published (zero: never),
// on the bubble's clock.
type clockStore struct {
	mu                   sync.Mutex
	leaseFree, published time.Time
	payload              []byte
}

var _ SnapshotStore = (*clockStore)(nil)

func (s *clockStore) Lease(context.Context, string, time.Duration) (bool, error) {
	return !time.Now().Before(s.leaseFree), nil
}

func (s *clockStore) Release(context.Context, string) error { return nil }

func (s *clockStore) Publish(_ context.Context, _ string, _ int64, payload []byte, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.payload = payload
	return nil
}

func (s *clockStore) Fetch(context.Context, string) ([]byte, int64, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.published.IsZero() || time.Now().Before(s.published) {
		return nil, 0, time.Time{}, ErrNotFound
	}
	return s.payload, s.published.UnixMilli(), s.published, nil
}

// docs/contract.md section 24, "Walk metrics mean one thing": a member
// that waits for another's lease and then walks records the PMS walk's
// own length and the wait apart; one that takes the publication records
// the wait alone.
func TestLoadRecordsTheWalkApartFromTheLeaseWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		store := &clockStore{leaseFree: start.Add(5 * time.Second)}
		c := &Coordinator{Store: store, Poll: 100 * time.Millisecond, Wait: time.Minute}
		walk := func(context.Context) ([]mapping.Property, time.Time, error) {
			time.Sleep(3 * time.Second)
			return props(), time.Now(), nil
		}
		st := &upstream.WalkStats{}
		l, err := c.Load(upstream.WithWalkStats(context.Background(), st), "acme", "live", time.Time{}, walk)
		if err != nil || l.Source != SourceLeader {
			t.Fatalf("load: %v, %v; want the leader's walk once the lease was free", l.Source, err)
		}
		if wt := st.WalkTime(); wt != 3*time.Second {
			t.Errorf("walk time %v; want the PMS walk alone, 3 s", wt)
		}
		if w, ok := st.LeaseWait(); !ok || w != 5*time.Second {
			t.Errorf("lease wait %v (%v); want the 5 s before the lease was free", w, ok)
		}

		// Another member publishes 2 s into this one's wait.
		payload, err := EncodeSnapshot(props(), start)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		store = &clockStore{leaseFree: now.Add(time.Hour), published: now.Add(2 * time.Second), payload: payload}
		c.Store = store
		st = &upstream.WalkStats{}
		if l, err := c.Load(upstream.WithWalkStats(context.Background(), st), "acme", "live", time.Time{}, walk); err != nil || l.Source != SourceShared {
			t.Fatalf("load: %v, %v; want the publication", l.Source, err)
		}
		if wt := st.WalkTime(); wt != 0 {
			t.Errorf("walk time %v; want none (no walk)", wt)
		}
		if w, ok := st.LeaseWait(); !ok || w != 2*time.Second {
			t.Errorf("lease wait %v (%v); want the 2 s until the publication", w, ok)
		}
	})
}

// docs/contract.md section 24: the member that walks publishes how long
// its PMS walk took; another member reads it with its next load (here
// one that takes the publication), for the Retry-After of its first walk.
func TestFleetRecordsTheWalkLength(t *testing.T) {
	eachForm(t, func(t *testing.T, f form) {
		client := f.client(t)
		walk := func(context.Context) ([]mapping.Property, time.Time, error) {
			time.Sleep(300 * time.Millisecond) // the PMS's time: the scenario
			return props(), time.Now(), nil
		}
		var a, b WalkLengths
		loadA := Loader(LoaderConfig{Store: NewStore(client, 0, testSecret), Brand: "acme", Mode: "live", TTL: time.Minute, Walk: walk, Walks: &a})
		if _, err := loadA(t.Context()); err != nil {
			t.Fatal(err)
		}
		if l := a.Last(); l < 300*time.Millisecond || l > time.Minute {
			t.Fatalf("the walker's record %v; want its walk's length, at least 300 ms", l)
		}
		loadB := Loader(LoaderConfig{Store: NewStore(client, 0, testSecret), Brand: "acme", Mode: "live", TTL: time.Minute, Walk: walk, Walks: &b})
		if _, err := loadB(t.Context()); err != nil {
			t.Fatal(err)
		}
		if b.Last() != a.Last() {
			t.Fatalf("another member read %v; want the fleet's record %v", b.Last(), a.Last())
		}
		// Another secret's record is not read.
		var c WalkLengths
		c.read(t.Context(), NewStore(client, 0, []byte("another-secret-of-32-bytes-long!")), SnapKey("acme", "live"))
		if c.Last() != 0 {
			t.Fatalf("a record under another secret read as %v; want none", c.Last())
		}
	})
}

package fleet

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// pausingStore runs afterFirstFetch once, right after its first Fetch
// returns: a test puts another instance's whole load there.
type pausingStore struct {
	SnapshotStore
	once            sync.Once
	afterFirstFetch func()
}

func (s *pausingStore) Fetch(ctx context.Context, name string) ([]byte, int64, time.Time, error) {
	payload, version, at, err := s.SnapshotStore.Fetch(ctx, name)
	s.once.Do(s.afterFirstFetch)
	return payload, version, at, err
}

// docs/contract.md section 17: an instance finds no publication, and before it
// asks for the lease another instance walks, publishes and releases (on a
// busy machine the gap between two Redis calls is that long). It then wins
// the lease, and must take the publication that landed meanwhile, not walk
// the PMS a second time: winning the lease is a permission to walk only
// once no publication is there.
func TestLeaseWonAfterPublicationWalksNoMore(t *testing.T) {
	srv := redistest.Start(t)
	p := &pms{}
	first := newCoordinator(NewStore(newTestClient(t, srv.URL(), nil, nil), 0, testSecret))
	late := &pausingStore{SnapshotStore: NewStore(newTestClient(t, srv.URL(), nil, nil), 0, testSecret)}
	late.afterFirstFetch = func() {
		if l, err := first.Load(t.Context(), "acme", "live", time.Time{}, p.load); err != nil || l.Source != SourceLeader {
			t.Errorf("first instance: %v, %v; want its walk as leader", l.Source, err)
		}
	}
	second := newCoordinator(late)
	l, err := second.Load(t.Context(), "acme", "live", time.Time{}, p.load)
	if err != nil || l.Source != SourceShared || len(l.Properties) != len(props()) {
		t.Errorf("second instance: %v, %v, %d properties; want the first's publication", l.Source, err, len(l.Properties))
	}
	if n := p.walks.Load(); n != 1 {
		t.Errorf("%d PMS walks, want 1", n)
	}
}

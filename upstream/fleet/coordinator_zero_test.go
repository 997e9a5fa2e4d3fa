package fleet

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// ttlStore records the TTLs the coordinator asks for; it wins the lease
// when win is set and never has a publication.
type ttlStore struct {
	fakeStore
	win bool

	mu                sync.Mutex
	leaseTTL, pubTTL  time.Duration
	leases, publishes int
}

func (s *ttlStore) Lease(_ context.Context, _ string, ttl time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leases++
	s.leaseTTL = ttl
	return s.win, nil
}

func (s *ttlStore) Publish(_ context.Context, _ string, _ int64, _ []byte, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishes++
	s.pubTTL = ttl
	return nil
}

// A Coordinator with zero (or negative) durations uses the documented
// defaults: no panic in time.NewTicker, no lease or publication without
// expiry (docs/architecture.md).
func TestCoordinatorZeroDurationsUseDefaults(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		synctest.Test(t, func(t *testing.T) {
			leader := &ttlStore{win: true}
			c := &Coordinator{Store: leader, LeaseTTL: d, PublishTTL: d, Poll: d}
			p := &pms{}
			if l, err := c.Load(t.Context(), "acme", "live", time.Time{}, p.load); err != nil || l.Source != SourceLeader {
				t.Fatalf("leader: %v, %v", l.Source, err)
			}
			if leader.leaseTTL != DefaultLeaseTTL || leader.pubTTL != DefaultPublishTTL {
				t.Fatalf("lease TTL %v, publication TTL %v; want %v and %v", leader.leaseTTL, leader.pubTTL, DefaultLeaseTTL, DefaultPublishTTL)
			}

			// A loser with Poll zero polls every DefaultPoll until Wait
			// (half a poll past the 20th, so the two never coincide).
			loser := &ttlStore{}
			wait := time.Second + DefaultPoll/2
			c = &Coordinator{Store: loser, Wait: wait, Poll: d}
			start := time.Now()
			if l, err := c.Load(t.Context(), "acme", "live", time.Time{}, p.load); err != nil || l.Source != SourceLocal {
				t.Fatalf("loser: %v, %v", l.Source, err)
			}
			if waited := time.Since(start); waited != wait {
				t.Fatalf("loser waited %v, want Wait (%v)", waited, wait)
			}
			if want := int(time.Second / DefaultPoll); loser.leases != want+1 {
				t.Fatalf("%d lease tries, want one and one per DefaultPoll (%d)", loser.leases, want+1)
			}
		})
	}
}

// The zero Coordinator (no Store) walks the PMS locally.
func TestZeroCoordinatorLoadsLocally(t *testing.T) {
	var c Coordinator
	p := &pms{}
	l, err := c.Load(t.Context(), "acme", "live", time.Time{}, p.load)
	if err != nil || l.Source != SourceLocal || len(l.Properties) != 2 || p.walks.Load() != 1 {
		t.Fatalf("%+v, %v, walks %d; want a local walk", l, err, p.walks.Load())
	}
}

package cache

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// raceCache is a cache whose snapshot checks can be held: hold() makes the
// next n callers stop right after they looked at the held snapshot (before
// they load, join a load or start a refresh) until release() is called.
type raceCache struct {
	*Cache
	mu      sync.Mutex
	holding int
	gate    chan struct{}
}

func newRaceCache(t *testing.T, inner *versioned, cfg Config) *raceCache {
	rc := &raceCache{Cache: New(inner, cfg), gate: make(chan struct{})}
	rc.Cache.afterCheck = func() {
		rc.mu.Lock()
		hold := rc.holding > 0
		if hold {
			rc.holding--
		}
		gate := rc.gate
		rc.mu.Unlock()
		if hold {
			<-gate
		}
	}
	t.Cleanup(rc.Close)
	return rc
}

func (rc *raceCache) hold(n int) {
	rc.mu.Lock()
	rc.holding, rc.gate = n, make(chan struct{})
	rc.mu.Unlock()
}

func (rc *raceCache) release() {
	rc.mu.Lock()
	close(rc.gate)
	rc.mu.Unlock()
}

// heldReaders starts n requests for the snapshot and returns once all n
// have looked and wait at the gate (hold); release lets them go on.
func (rc *raceCache) heldReaders(t *testing.T, n int) *sync.WaitGroup {
	rc.hold(n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := rc.Snapshot(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	synctest.Wait()
	return &wg
}

// docs/contract.md section 15, deterministic: from cold, a request that saw no
// snapshot and joins only after the first load has stored one and ended
// takes that snapshot: one load, not two.
func TestColdLateJoinerMakesNoSecondLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newVersioned(3)
		c := newRaceCache(t, inner, Config{Now: onTheDay(), TTL: time.Minute})
		wg := c.heldReaders(t, 5)                                   // five requests look, see nothing, and wait
		if _, err := c.Snapshot(context.Background()); err != nil { // the first load, stored and ended
			t.Fatal(err)
		}
		c.release()
		wg.Wait()
		if n := inner.snapCalls.Load(); n != 1 {
			t.Errorf("%d snapshot loads; want 1", n)
		}
	})
}

// docs/contract.md section 15, refresh after the TTL: requests that saw the
// expired snapshot and join after its reload ended take the reloaded one;
// requests that saw a snapshot due for refresh start no refresh once a
// newer one is held. One load per expiry, whatever the concurrency.
func TestOneLoadPerExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newVersioned(3)
		c := newRaceCache(t, inner, Config{Now: onTheDay(), TTL: time.Second, RefreshAhead: 0.8})
		ctx := context.Background()
		if _, err := c.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		for round := 1; round <= 3; round++ {
			time.Sleep(1500 * time.Millisecond) // expired
			wg := c.heldReaders(t, 8)
			if _, err := c.Snapshot(ctx); err != nil { // reloads after the expiry
				t.Fatal(err)
			}
			c.release()
			wg.Wait()
			synctest.Wait()
			if got, want := inner.snapCalls.Load(), int64(1+round); got != want {
				t.Fatalf("expiry %d: %d snapshot loads in all; want %d", round, got, want)
			}
		}

		// Refresh ahead (past 0.8 TTL): requests that saw the aging snapshot
		// and start their refresh after another refresh stored a newer one
		// load nothing.
		time.Sleep(900 * time.Millisecond) // the bubble's clock
		wg := c.heldReaders(t, 8)
		before := inner.snapCalls.Load()
		if _, err := c.Snapshot(ctx); err != nil { // starts the one refresh
			t.Fatal(err)
		}
		synctest.Wait() // the refresh has stored its snapshot and ended
		c.release()
		wg.Wait()
		synctest.Wait()
		if got := inner.snapCalls.Load() - before; got != 1 {
			t.Errorf("refresh ahead: %d loads; want 1", got)
		}
	})
}

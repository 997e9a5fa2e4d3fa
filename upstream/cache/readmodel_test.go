package cache

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/uuid"

	"github.com/partner-edge/partner-edge/upstream"
)

// docs/contract.md section 11 (cache level): from cold, 10,000 gets of random
// unknown ids from 20 concurrent clients are all NotFound, and the PMS sees
// one snapshot load and no get.
func TestColdUnknownIDsMakeOneLoad(t *testing.T) {
	inner := newVersioned(5)
	c := New(inner, Config{Now: onTheDay(), TTL: time.Minute})
	defer c.Close()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for range 500 {
				if _, err := c.Property(context.Background(), uuid.NewString()); upstream.KindOf(err) != upstream.NotFound {
					t.Errorf("err %v, want not found", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if s, p := inner.snapCalls.Load(), inner.propCalls.Load(); s != 1 || p != 0 {
		t.Fatalf("inner snapshot loads %d, gets %d; want 1 and 0", s, p)
	}
}

// docs/contract.md section 11: TTL 1 s and a request every 50 ms for 5 s: after
// the first load every request is a hit (answered without waiting on a
// load), while background refreshes keep the snapshot fresh.
func TestSteadyTrafficNeverWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newVersioned(3)
		var out outcomes
		c := New(inner, Config{Now: onTheDay(), TTL: time.Second, OnOutcome: out.record})
		defer c.Close()
		ctx := context.Background()
		if _, err := c.Snapshot(ctx); err != nil {
			t.Fatal(err)
		}
		for range 100 {
			<-time.After(50 * time.Millisecond) // the traffic's pace, on the bubble's clock
			if _, err := c.Property(ctx, propertyID(1)); err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // a refresh started by this request has ended
		}
		if out.get(OutcomeHit) != 100 || out.get(OutcomeMiss) != 1 || out.get(OutcomeCoalesced) != 0 || out.get(OutcomeStale) != 0 {
			t.Fatalf("outcomes %v; want 1 miss then 100 hits", out.n)
		}
		if n := inner.snapCalls.Load(); n < 5 || int64(out.get(OutcomeRefresh)) != n-1 {
			t.Fatalf("loads %d, refreshes %d; want about one refresh per TTL, all in the background", n, out.get(OutcomeRefresh))
		}
	})
}

// docs/contract.md section 11: a load that panics fails the callers that waited
// with Internal, is counted, and the next call loads again; the process
// (test) survives and goleak (TestMain) finds no goroutine left.
func TestPanickingLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		inner := newVersioned(3)
		good := inner.snapshot
		inner.snapshot = func(context.Context) (*upstream.Snapshot, error) {
			<-release
			panic("a bug in mapping")
		}
		panics := 0
		c := New(inner, Config{Now: onTheDay(), TTL: time.Second, OnOutcome: func(o string) {
			if o == OutcomePanic {
				panics++
			}
		}})
		defer c.Close()
		errs := make(chan error, 10)
		for range 10 {
			go func() { _, err := c.Property(context.Background(), propertyID(1)); errs <- err }()
		}
		synctest.Wait()
		close(release)
		for range 10 {
			if err := <-errs; upstream.KindOf(err) != upstream.Internal {
				t.Fatalf("waiter: %v, want internal", err)
			}
		}
		if panics != 1 {
			t.Fatalf("panics counted %d, want 1", panics)
		}
		inner.snapshot = good
		if _, err := c.Property(context.Background(), propertyID(1)); err != nil {
			t.Fatalf("after the panic: %v, want the property", err)
		}
	})
}

// docs/contract.md section 11: TTL 0, 50 concurrent identical gets against a PMS
// answering in 300 ms make at most 2 PMS calls.
func TestDisabledCoalescesIdenticalGets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newVersioned(3)
		get := inner.property
		inner.property = func(ctx context.Context, id string) (*upstream.Item, error) {
			<-time.After(300 * time.Millisecond)
			return get(ctx, id)
		}
		c := New(inner, Config{Now: onTheDay(), TTL: 0})
		defer c.Close()
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				if _, err := c.Property(context.Background(), propertyID(2)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := inner.propCalls.Load(); n > 2 {
			t.Fatalf("PMS gets %d, want at most 2", n)
		}
	})
}

// Stale-if-error for gets: past TTL the held snapshot answers while its
// refresh walk runs (an unknown id is NotFound, as from a fresh one); once
// that walk has failed, a known id is served from the held snapshot, an
// unknown one gets the failure (not NotFound), and the failed load backs
// refreshes off: the next calls are served stale without asking the PMS
// until the backoff ends.
func TestPropertyStaleWhilePMSFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newVersioned(3)
		clk := newClock()
		c := New(inner, Config{TTL: 10 * time.Second, Stale: time.Minute, RefreshBackoff: 2 * time.Second, Now: clk.Now})
		defer c.Close()
		ctx := context.Background()
		if _, err := c.Property(ctx, propertyID(1)); err != nil {
			t.Fatal(err)
		}
		clk.Advance(20 * time.Second)
		inner.fail.Store(&upstream.Error{Kind: upstream.BadGateway})
		// The refresh walk runs until released: the lookup below must meet
		// it running, whatever order the scheduler (the race detector's
		// included) gives the two goroutines.
		release := make(chan struct{})
		load := inner.snapshot
		inner.snapshot = func(ctx context.Context) (*upstream.Snapshot, error) {
			<-release
			return load(ctx)
		}
		if _, err := c.Property(ctx, propertyID(99)); upstream.KindOf(err) != upstream.NotFound {
			t.Fatalf("unknown id while the refresh walk runs: %v, want NotFound", err)
		}
		close(release)
		synctest.Wait() // the refresh walk failed
		if _, err := c.Property(ctx, propertyID(1)); err != nil {
			t.Fatalf("known id during outage: %v, want stale data", err)
		}
		if _, err := c.Property(ctx, propertyID(99)); upstream.KindOf(err) == upstream.NotFound || err == nil {
			t.Fatalf("unknown id during outage: %v, want the failure", err)
		}
		synctest.Wait()
		if n := inner.snapCalls.Load(); n != 2 {
			t.Fatalf("loads %d, want 2 (the later calls are within the backoff)", n)
		}
		clk.Advance(3 * time.Second)
		inner.fail.Store(nil)
		if _, err := c.Property(ctx, propertyID(1)); err != nil {
			t.Fatalf("after the backoff: %v", err)
		}
		synctest.Wait()
		if n := inner.snapCalls.Load(); n != 3 {
			t.Fatalf("after the backoff: loads %d; want a new load", n)
		}
		if _, err := c.Property(ctx, propertyID(99)); upstream.KindOf(err) != upstream.NotFound {
			t.Fatalf("unknown id after the walk succeeded: %v, want NotFound", err)
		}
	})
}

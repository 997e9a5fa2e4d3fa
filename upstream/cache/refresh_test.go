package cache

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
)

// Past RefreshAhead*TTL a hit is still served at once from the store while
// exactly one background load replaces the entry.
func TestRefreshAheadSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newVersioned(3)
		var out outcomes
		c := New(inner, Config{TTL: 10 * time.Second, RefreshAhead: 0.8, OnOutcome: out.record})
		defer c.Close()
		ctx := context.Background()
		old, err := c.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}

		time.Sleep(7 * time.Second) // below 0.8*TTL: a plain hit
		if _, err := c.Snapshot(ctx); err != nil || inner.snapCalls.Load() != 1 {
			t.Fatalf("before the refresh point: %v, loads %d; want a hit", err, inner.snapCalls.Load())
		}

		release := make(chan struct{})
		next := inner.snapshot
		inner.snapshot = func(ctx context.Context) (*upstream.Snapshot, error) {
			select {
			case <-release:
				return next(ctx)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		time.Sleep(time.Second) // 8s: at the refresh point
		for range 20 {
			got, err := c.Snapshot(ctx)
			if err != nil || got != old {
				t.Fatalf("during refresh: %v, old data %v; want the cached snapshot at once", err, got == old)
			}
			if _, err := c.Property(ctx, propertyID(1)); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if n := inner.snapCalls.Load(); n != 2 || out.get(OutcomeRefresh) != 1 {
			t.Fatalf("loads %d, outcomes %v; want exactly one background refresh", n, out.n)
		}
		close(release)
		synctest.Wait()
		fresh, err := c.Snapshot(ctx)
		if err != nil || mustJSON(t, fresh) == mustJSON(t, old) || inner.snapCalls.Load() != 2 {
			t.Fatalf("after refresh: %v, new data %v, loads %d", err, fresh != old, inner.snapCalls.Load())
		}
		if out.get(OutcomeMiss) != 1 || out.get(OutcomeHit) != 42 {
			t.Fatalf("outcomes %v, want 1 miss and 42 hits", out.n)
		}
	})
}

// A failed refresh leaves the entry in place and lets the next hit in the
// window try again; a refreshed per-id entry is replaced the same way.
func TestRefreshAheadFailureAndPerID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newVersioned(3)
		var out outcomes
		c := New(inner, Config{TTL: 10 * time.Second, OnOutcome: out.record}) // default RefreshAhead 0.8
		defer c.Close()
		ctx := context.Background()
		old, err := c.Property(ctx, propertyID(2))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(9 * time.Second)
		inner.fail.Store(problem.New(problem.BadGateway, "down"))
		for range 2 {
			if got, err := c.Property(ctx, propertyID(2)); err != nil || got != old {
				t.Fatalf("hit during failing refresh: %v", err)
			}
			synctest.Wait() // the refresh has failed and cleared its flag
		}
		if n := inner.propCalls.Load(); n != 3 || out.get(OutcomeRefresh) != 2 {
			t.Fatalf("PMS asked %d times, outcomes %v; want 1 load + 2 refresh attempts", n, out.n)
		}
		inner.fail.Store(nil)
		if _, err := c.Property(ctx, propertyID(2)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		got, err := c.Property(ctx, propertyID(2))
		if err != nil || got == old || string(got.JSON) == string(old.JSON) {
			t.Fatalf("after a good refresh: %v, replaced %v", err, got != old)
		}
		if c.Len() != 1 {
			t.Fatalf("Len %d, want 1", c.Len())
		}
	})
}

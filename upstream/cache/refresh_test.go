package cache

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// Past RefreshAhead*TTL a hit is still served at once from the store while
// exactly one background load replaces the entry.
func TestRefreshAheadSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newVersioned(3)
		var out outcomes
		clk := newClock()
		c := New(inner, Config{TTL: 10 * time.Second, RefreshAhead: 0.8, OnOutcome: out.record, Now: clk.Now})
		defer c.Close()
		ctx := context.Background()
		old, err := c.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}

		clk.Advance(7 * time.Second) // below 0.8*TTL: a plain hit
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
		clk.Advance(time.Second) // 8s: at the refresh point
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

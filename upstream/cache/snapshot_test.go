package cache

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// Within TTL the snapshot answers alone; from TTL on it still answers, at
// once, while one background walk refreshes it (docs/contract.md section
// 24: the next walk starts TTL after the previous one ended, never
// sooner), and the next caller gets the new data.
func TestSnapshotFreshHitThenRefreshAfterTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := newVersioned(3)
		clk := newClock()
		var out outcomes
		c := New(inner, Config{Key: "aurora/live", TTL: 30 * time.Second, Now: clk.Now, OnOutcome: out.record})
		defer c.Close()
		ctx := context.Background()

		first, err := c.Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(30*time.Second - time.Nanosecond)
		again, err := c.Snapshot(ctx)
		synctest.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if again != first || inner.snapCalls.Load() != 1 {
			t.Fatalf("within TTL: same=%v, inner loads=%d; want the cached snapshot and 1 load", again == first, inner.snapCalls.Load())
		}
		if out.get(OutcomeMiss) != 1 || out.get(OutcomeHit) != 1 {
			t.Fatalf("outcomes %v, want 1 miss and 1 hit", out.n)
		}

		clk.Advance(time.Nanosecond) // exactly TTL old: no longer fresh
		held, err := c.Snapshot(ctx)
		if err != nil || held != first {
			t.Fatalf("at TTL: %v, same=%v; want the held snapshot while it is refreshed", err, held == first)
		}
		synctest.Wait() // the refresh walk ends
		if inner.snapCalls.Load() != 2 || out.get(OutcomeRefresh) != 1 {
			t.Fatalf("at TTL: inner loads=%d, outcomes %v; want one refresh", inner.snapCalls.Load(), out.n)
		}
		reloaded, err := c.Snapshot(ctx)
		if err != nil || mustJSON(t, reloaded) == mustJSON(t, first) {
			t.Fatalf("after the refresh: %v, new data=%v; want the new snapshot", err, err == nil && mustJSON(t, reloaded) != mustJSON(t, first))
		}
		if c.Len() != 3 {
			t.Fatalf("Len = %d, want 3 (the snapshot's properties)", c.Len())
		}
	})
}

// Past TTL with the PMS failing the held snapshot answers: first while
// the refresh walk runs, then as stale data served because it failed,
// until Stale; from then on a caller waits for a load and gets its
// failure.
func TestSnapshotStaleServedOnPMSFailureUntilStale(t *testing.T) {
	for _, code := range []upstream.Kind{upstream.BadGateway, upstream.Unavailable, upstream.Timeout} {
		t.Run(code.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := newVersioned(3)
				clk := newClock()
				var out outcomes
				c := New(inner, Config{Key: "aurora/live", TTL: 30 * time.Second, Stale: 5 * time.Minute,
					Now: clk.Now, OnOutcome: out.record})
				defer c.Close()
				ctx := context.Background()

				loaded := clk.Now()
				first, err := c.Snapshot(ctx)
				if err != nil {
					t.Fatal(err)
				}
				want := mustJSON(t, first)
				inner.fail.Store(&upstream.Error{Kind: code, Err: errors.New("pms down")})
				// A PMS takes time to fail: in the bubble the sleep ends
				// only once every other goroutine is blocked, so the
				// caller that started the refresh walk answers before the
				// walk has failed, however the scheduler runs them.
				load := inner.snapshot
				inner.snapshot = func(ctx context.Context) (*upstream.Snapshot, error) {
					time.Sleep(time.Millisecond)
					return load(ctx)
				}

				for _, age := range []time.Duration{30 * time.Second, 2 * time.Minute, 5*time.Minute - time.Millisecond} {
					clk.Set(loaded.Add(age))
					got, err := c.Snapshot(ctx)
					time.Sleep(time.Second) // bubble time: the refresh walk fails
					synctest.Wait()
					if err != nil {
						t.Fatalf("age %v: %v, want the stale snapshot", age, err)
					}
					if mustJSON(t, got) != want {
						t.Fatalf("age %v: body changed", age)
					}
				}
				if out.get(OutcomeStale) != 2 || out.get(OutcomeHit) != 1 {
					t.Fatalf("outcomes %v, want 1 hit (the first walk had not failed yet) and 2 stale", out.n)
				}

				clk.Advance(time.Millisecond) // exactly Stale old
				_, err = c.Snapshot(ctx)
				if upstream.KindOf(err) != code {
					t.Fatalf("at Stale: err %v, want %s", err, code)
				}
				if got := inner.snapCalls.Load(); got != 5 {
					t.Fatalf("inner loads = %d, want 5 (1 good, 4 failed)", got)
				}

				inner.fail.Store(nil) // the PMS heals
				healed, err := c.Snapshot(ctx)
				if err != nil || mustJSON(t, healed) == want {
					t.Fatalf("after healing: err %v, new data %v", err, err == nil && mustJSON(t, healed) != want)
				}
			})
		})
	}
}

// A caller that waits for a load (no snapshot younger than Stale) gets a
// fault of the edge as is, never stale data; a caller's own cancellation
// is its context's error.
func TestSnapshotOtherErrorsAreNotServedStale(t *testing.T) {
	inner := newVersioned(3)
	clk := newClock()
	c := New(inner, Config{TTL: time.Second, Stale: time.Hour, Now: clk.Now})
	defer c.Close()
	if _, err := c.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Hour)
	inner.fail.Store(&upstream.Error{Kind: upstream.Internal, Err: errors.New("bug")})
	if _, err := c.Snapshot(context.Background()); upstream.KindOf(err) != upstream.Internal {
		t.Fatalf("err %v, want INTERNAL_ERROR passed through", err)
	}

	// A caller's own cancellation is its context's error, never stale data.
	inner.fail.Store(nil)
	inner.snapshot = func(ctx context.Context) (*upstream.Snapshot, error) { <-ctx.Done(); return nil, ctx.Err() }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Snapshot(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestDisabledPassesThrough(t *testing.T) {
	inner := newVersioned(3)
	var out outcomes
	c := New(inner, Config{Now: onTheDay(), TTL: 0, OnOutcome: out.record})
	defer c.Close()
	for range 3 {
		if _, err := c.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Property(context.Background(), propertyID(1)); err != nil {
			t.Fatal(err)
		}
	}
	if inner.snapCalls.Load() != 3 || inner.propCalls.Load() != 3 || c.Len() != 0 || out.get(OutcomeMiss) != 6 {
		t.Fatalf("loads %d/%d, Len %d, outcomes %v; want every call passed through, nothing stored",
			inner.snapCalls.Load(), inner.propCalls.Load(), c.Len(), out.n)
	}
}

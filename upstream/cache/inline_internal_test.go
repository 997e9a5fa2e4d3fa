package cache

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// doneCounting is a caller's context that counts the calls of Done: the
// edge's request context starts its deadline's timer on the first one,
// which the inline path exists to avoid.
type doneCounting struct {
	context.Context
	dones atomic.Int64
}

func (d *doneCounting) Done() <-chan struct{} {
	d.dones.Add(1)
	return d.Context.Done()
}

// stackOf is the stack of the calling goroutine.
func stackOf() string {
	buf := make([]byte, 64<<10)
	return string(buf[:runtime.Stack(buf, false)])
}

// A caller with a deadline at least LoadTimeout away runs the load on its
// own goroutine: the load's stack is the caller's (Cache.Snapshot below
// it, no goroutine of its own), and the caller's Done is never asked. A
// caller without a deadline, or with one nearer than LoadTimeout, or whose
// context has already ended, hands the load to a goroutine (waiter.run).
func TestInlineLoadRunsOnCallersGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stacks := make(chan string, 1) // the stack of each load
		inner := &fakeCatalog{snapshot: func(context.Context) (*upstream.Snapshot, error) {
			stacks <- stackOf()
			return testSnapshot(3, 1), nil
		}}
		c := New(inner, Config{Now: onTheDay(), TTL: 0, LoadTimeout: 5 * time.Second}) // TTL 0: every call loads
		defer c.Close()

		tctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // exactly LoadTimeout: inline
		defer cancel()
		ctx := &doneCounting{Context: tctx}
		if s, err := c.Snapshot(ctx); err != nil || s.Len() != 3 {
			t.Fatalf("inline load: %v, %v; want the snapshot", s, err)
		}
		stack := <-stacks
		if !strings.Contains(stack, "cache.(*Cache).Snapshot(") || strings.Contains(stack, "(*waiter).run") {
			t.Fatalf("the load did not run on the caller's goroutine; its stack:\n%s", stack)
		}
		if n := ctx.dones.Load(); n != 0 {
			t.Fatalf("the inline path asked the caller's Done %d times; want 0", n)
		}

		short, cancelShort := context.WithTimeout(context.Background(), 5*time.Second-time.Nanosecond)
		defer cancelShort()
		ended, end := context.WithTimeout(context.Background(), time.Hour)
		end()
		for _, tc := range []struct {
			name string
			ctx  context.Context
		}{
			{"no deadline", context.Background()},
			{"deadline 1ns short of LoadTimeout", short},
			{"context already ended", ended},
		} {
			_, _ = c.Snapshot(tc.ctx)
			stack := <-stacks
			if !strings.Contains(stack, "(*waiter).run") || strings.Contains(stack, "cache.(*Cache).Snapshot(") {
				t.Fatalf("%s: the load did not run on a goroutine of its own; its stack:\n%s", tc.name, stack)
			}
		}
	})
}

// A caller whose deadline is nearer than its load's keeps the worker
// path: it gets its deadline's answer on time while the load goes on, and
// the load's result is held for the next caller. While a walk of the
// snapshot goes on that answer is Unavailable with a Retry-After
// (docs/contract.md section 24: 503, never 504); with TTL 0 the load is
// the caller's own call and its deadline a timeout.
func TestShortDeadlineLeavesWhileTheLoadGoesOn(t *testing.T) {
	for _, tc := range []struct {
		ttl  time.Duration
		kind upstream.Kind
	}{{time.Minute, upstream.Unavailable}, {0, upstream.Timeout}} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				started := make(chan context.Context, 1)
				inner := &fakeCatalog{snapshot: blocking(release, started)}
				c := New(inner, Config{Now: onTheDay(), TTL: tc.ttl, LoadTimeout: 10 * time.Second, WalkTimeout: 10 * time.Second})
				defer c.Close()

				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				t0 := time.Now()
				_, err := c.Snapshot(ctx)
				var ue *upstream.Error
				if !errors.As(err, &ue) || ue.Kind != tc.kind || time.Since(t0) != time.Second ||
					tc.kind == upstream.Unavailable && ue.RetryAfter < time.Second ||
					tc.kind == upstream.Timeout && !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("short deadline: %v after %v; want %s at the caller's deadline (1s)", err, time.Since(t0), tc.kind)
				}
				loadCtx := <-started
				if loadCtx.Err() != nil {
					t.Fatalf("the load ended with its caller: %v", loadCtx.Err())
				}
				close(release)
				synctest.Wait()
				if tc.ttl == 0 {
					return // nothing is held
				}
				if s, err := c.Snapshot(context.Background()); err != nil || s.Len() != 3 || inner.snapCalls.Load() != 1 {
					t.Fatalf("next caller: %v, %v, %d loads; want the held snapshot of the one load", s, err, inner.snapCalls.Load())
				}
			})
		})
	}
}

// A caller cancelled while it leads an inline load gets the Canceled
// classification once the load ends (not before: it waits on its own
// goroutine), and the load's snapshot is held for the next caller.
func TestInlineLeaderCancelledGetsCanceledAfterTheLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		started := make(chan context.Context, 1)
		inner := &fakeCatalog{snapshot: blocking(release, started)}
		var out outcomes
		c := New(inner, Config{Now: onTheDay(), TTL: time.Minute, WalkTimeout: 5 * time.Second, OnOutcome: out.record})
		defer c.Close()

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			s, err := c.Snapshot(ctx)
			if s != nil {
				err = errors.New("a snapshot for a caller that left")
			}
			done <- err
		}()
		loadCtx := <-started
		cancel()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("the inline leader answered before its load ended: %v", err)
		default:
		}
		if loadCtx.Err() != nil {
			t.Fatalf("the load was cancelled with its leader: %v", loadCtx.Err())
		}
		t0 := time.Now()
		close(release)
		err := <-done
		var pe *upstream.Error
		if !errors.As(err, &pe) || pe.Kind != upstream.Canceled || !errors.Is(err, context.Canceled) || time.Since(t0) != 0 {
			t.Fatalf("cancelled inline leader: %v; want a Canceled *upstream.Error wrapping context.Canceled when the load ends", err)
		}
		if n := out.get(OutcomeMiss) + out.get(OutcomeCoalesced); n != 0 {
			t.Fatalf("outcomes %v for a caller that left; want none", out.n)
		}
		if s, err := c.Snapshot(context.Background()); err != nil || s.Len() != 3 || inner.snapCalls.Load() != 1 || out.get(OutcomeHit) != 1 {
			t.Fatalf("next caller: %v, %v, %d loads, outcomes %v; want a hit on the one load's snapshot", s, err, inner.snapCalls.Load(), out.n)
		}
	})
}

// A panicking load fails its inline leader with upstream.Internal and a
// reported panic, as on the worker path (inline callers' errors:
// TestCoalescedErrorsAreNotShared).
func TestInlineLoadPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &fakeCatalog{snapshot: func(context.Context) (*upstream.Snapshot, error) { panic("boom") }}
		var panics atomic.Int64
		c := New(inner, Config{Now: onTheDay(), TTL: time.Second, OnOutcome: func(o string) {
			if o == OutcomePanic {
				panics.Add(1)
			}
		}})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := c.Snapshot(ctx); upstream.KindOf(err) != upstream.Internal || panics.Load() != 1 {
			t.Fatalf("panicking inline load: %v, %d panics; want upstream.Internal and one panic", err, panics.Load())
		}
	})
}

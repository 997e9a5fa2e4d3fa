package cache

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// blocking returns a snapshot func that waits for release (or its context)
// and reports the context it ran under on started.
func blocking(release <-chan struct{}, started chan<- context.Context) func(context.Context) (*upstream.Snapshot, error) {
	return func(ctx context.Context) (*upstream.Snapshot, error) {
		started <- ctx
		select {
		case <-release:
			return testSnapshot(3, 1), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// 100 concurrent cold requests make one inner load, and all get its result
// (docs/resilience.md). synctest.Wait proves every caller is waiting on
// the load before it is released, so the count is coalescing, not caching.
func TestSnapshotHerdMakesOneLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		started := make(chan context.Context, 100)
		inner := &fakeCatalog{snapshot: blocking(release, started)}
		var out outcomes
		c := New(inner, Config{Now: onTheDay(), Key: "aurora/live", TTL: time.Second, OnOutcome: out.record})
		defer c.Close()

		var wg sync.WaitGroup
		results := make([]*upstream.Snapshot, 100)
		errs := make([]error, 100)
		for i := range 100 {
			wg.Go(func() { results[i], errs[i] = c.Snapshot(context.Background()) })
		}
		synctest.Wait()
		if n := inner.snapCalls.Load(); n != 1 {
			t.Fatalf("inner loads while 100 callers wait = %d, want 1", n)
		}
		close(release)
		wg.Wait()
		for i := range 100 {
			if errs[i] != nil || results[i] != results[0] {
				t.Fatalf("caller %d: err %v, same snapshot %v", i, errs[i], results[i] == results[0])
			}
		}
		if inner.snapCalls.Load() != 1 || out.get(OutcomeMiss) != 1 || out.get(OutcomeCoalesced) != 99 {
			t.Fatalf("inner loads %d, outcomes %v; want 1 load, 1 miss, 99 coalesced", inner.snapCalls.Load(), out.n)
		}
	})
}

// The caller that started the load cancels: it gets context.Canceled, the
// load goes on undisturbed and the followers get the data.
func TestCancelledLeaderDoesNotFailFollowers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		started := make(chan context.Context, 1)
		inner := &fakeCatalog{snapshot: blocking(release, started)}
		c := New(inner, Config{Now: onTheDay(), TTL: time.Second})
		defer c.Close()

		type res struct {
			s   *upstream.Snapshot
			err error
		}
		leaderCtx, cancelLeader := context.WithCancel(upstream.WithCallerIDs(context.Background(), upstream.CallerIDs{RequestID: "req_leader"}))
		leader := make(chan res, 1)
		go func() { s, err := c.Snapshot(leaderCtx); leader <- res{s, err} }()
		loadCtx := <-started

		followers := make(chan res, 10)
		for range 10 {
			go func() { s, err := c.Snapshot(context.Background()); followers <- res{s, err} }()
		}
		synctest.Wait()
		cancelLeader()
		if r := <-leader; !errors.Is(r.err, context.Canceled) || r.s != nil {
			t.Fatalf("leader: %v, %v; want context.Canceled", r.s, r.err)
		}
		if loadCtx.Err() != nil {
			t.Fatalf("the shared load was cancelled with its leader: %v", loadCtx.Err())
		}
		if got := upstream.CallerIDsFrom(loadCtx).RequestID; got != "req_leader" {
			t.Fatalf("load context lost the leader's values: request id %q", got)
		}
		close(release)
		for range 10 {
			if r := <-followers; r.err != nil || r.s == nil || r.s.Len() != 3 {
				t.Fatalf("follower: %v, %v; want the data", r.s, r.err)
			}
		}
		if n := inner.snapCalls.Load(); n != 1 {
			t.Fatalf("inner loads = %d, want 1", n)
		}
	})
}

// A load that outlives its deadline fails every waiter with
// GATEWAY_TIMEOUT (not a context error, which would read as their own
// cancellation), and stale data is served instead when there is some. A
// walk's deadline is WalkTimeout (docs/contract.md section 24), never
// LoadTimeout; with TTL 0 the walk is the partner's own call, under
// LoadTimeout.
func TestLoadTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"walk budget", Config{TTL: time.Second, Stale: time.Minute, LoadTimeout: time.Second, WalkTimeout: 2 * time.Second}},
		{"TTL 0", Config{LoadTimeout: 2 * time.Second, WalkTimeout: time.Hour}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				started := make(chan context.Context, 10)
				never := make(chan struct{})
				inner := &fakeCatalog{snapshot: blocking(never, started)}
				clk := newClock()
				cfg := tc.cfg
				cfg.Now = clk.Now
				c := New(inner, cfg)
				defer c.Close()

				t0 := time.Now()
				_, err := c.Snapshot(context.Background())
				if upstream.KindOf(err) != upstream.Timeout || time.Since(t0) != 2*time.Second {
					t.Fatalf("err %v after %v; want GATEWAY_TIMEOUT after 2s", err, time.Since(t0))
				}
				if cfg.TTL == 0 {
					return
				}
				ok := make(chan struct{})
				close(ok)
				inner.snapshot = blocking(ok, started)
				if _, err := c.Snapshot(context.Background()); err != nil {
					t.Fatal(err)
				}
				clk.Advance(2 * time.Second) // past TTL, within Stale
				inner.snapshot = blocking(never, started)
				s, err := c.Snapshot(context.Background())
				if err != nil || s == nil {
					t.Fatalf("slow PMS with a stale entry: %v; want the stale snapshot", err)
				}
			})
		})
	}
}

// A caller whose own deadline passes while it waits gets stale data if
// there is some, else, the walk going on, Unavailable with a Retry-After
// (docs/contract.md section 24: 503, never 504, while a walk progresses).
func TestCallerDeadlineServesStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan context.Context, 10)
		never := make(chan struct{})
		inner := &fakeCatalog{snapshot: blocking(never, started)}
		var out outcomes
		clk := newClock()
		c := New(inner, Config{TTL: time.Second, Stale: time.Minute, WalkTimeout: 10 * time.Second, OnOutcome: out.record, Now: clk.Now})
		defer c.Close()

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		var ue *upstream.Error
		if _, err := c.Snapshot(ctx); !errors.As(err, &ue) || ue.Kind != upstream.Unavailable || ue.RetryAfter < time.Second {
			t.Fatalf("cold, caller deadline: %v; want Unavailable with a Retry-After", err)
		}
		<-(<-started).Done() // the abandoned load times out (WalkTimeout, bubble clock)
		synctest.Wait()

		ok := make(chan struct{})
		close(ok)
		inner.snapshot = blocking(ok, started)
		if _, err := c.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-started
		clk.Advance(2 * time.Second)
		inner.snapshot = blocking(never, started)
		ctx2, cancel2 := context.WithTimeout(context.Background(), time.Second)
		defer cancel2()
		t0 := time.Now()
		if s, err := c.Snapshot(ctx2); err != nil || s == nil || time.Since(t0) != 0 {
			t.Fatalf("warm, past TTL: %v after %v; want the held snapshot at once while its walk goes on", err, time.Since(t0))
		}
		<-(<-started).Done() // the refresh walk times out (WalkTimeout)
		synctest.Wait()
		ctx3, cancel3 := context.WithTimeout(context.Background(), time.Second)
		defer cancel3()
		if s, err := c.Snapshot(ctx3); err != nil || s == nil {
			t.Fatalf("warm, after the failed walk: %v; want the stale snapshot", err)
		}
		if out.get(OutcomeStale) != 1 {
			t.Fatalf("outcomes %v, want 1 stale", out.n)
		}
	})
}

// Close cancels the loads in flight and waits for them; afterwards loads
// fail with SERVICE_UNAVAILABLE, so data younger than Stale is still served
// while the edge drains.
func TestCloseStopsLoads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		started := make(chan context.Context, 10)
		never := make(chan struct{})
		ok := make(chan struct{})
		close(ok)
		inner := &fakeCatalog{snapshot: blocking(ok, started)}
		clk := newClock()
		c := New(inner, Config{TTL: time.Second, Stale: time.Minute, LoadTimeout: time.Hour, Now: clk.Now})
		if _, err := c.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-started
		clk.Advance(2 * time.Second)
		inner.snapshot = blocking(never, started)

		done := make(chan error, 1)
		go func() {
			_, err := c.Snapshot(context.Background())
			done <- err
		}()
		loadCtx := <-started
		c.Close() // returns only once the load has ended
		if loadCtx.Err() == nil {
			t.Fatal("Close returned with the load's context still live")
		}
		if err := <-done; err != nil {
			t.Fatalf("waiter on a load cut by Close: %v; want the stale snapshot", err)
		}
		calls := inner.snapCalls.Load()
		if s, err := c.Snapshot(context.Background()); err != nil || s == nil || inner.snapCalls.Load() != calls {
			t.Fatalf("after Close: %v, inner asked %v; want stale data without a load", err, inner.snapCalls.Load() != calls)
		}
		clk.Advance(time.Minute)
		if _, err := c.Snapshot(context.Background()); upstream.KindOf(err) != upstream.Unavailable {
			t.Fatalf("after Close, past Stale: %v; want SERVICE_UNAVAILABLE", err)
		}
		c.Close() // idempotent
	})
}

// Callers coalesced on a failed load each get their own *upstream.Error, so
// that one caller annotating it cannot race with another writing it: on
// the worker path (no deadline) and on the inline one (a deadline farther
// than LoadTimeout).
func TestCoalescedErrorsAreNotShared(t *testing.T) {
	for _, path := range []string{"worker", "inline"} {
		t.Run(path, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				inner := &fakeCatalog{snapshot: func(context.Context) (*upstream.Snapshot, error) {
					<-release
					return nil, &upstream.Error{Kind: upstream.BadGateway, Err: errors.New("down")}
				}}
				c := New(inner, Config{Now: onTheDay(), TTL: time.Second})
				defer c.Close()
				ctx := context.Background()
				if path == "inline" {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Minute)
					defer cancel()
				}
				errs := make(chan error, 2)
				for range 2 {
					go func() { _, err := c.Snapshot(ctx); errs <- err }()
				}
				synctest.Wait()
				close(release)
				a, b := <-errs, <-errs
				var pa, pb *upstream.Error
				if !errors.As(a, &pa) || !errors.As(b, &pb) || pa == pb || pa.Kind != upstream.BadGateway || pb.Kind != upstream.BadGateway {
					t.Fatalf("errors %v and %v; want two distinct BAD_GATEWAY values", a, b)
				}
				if inner.snapCalls.Load() != 1 {
					t.Fatalf("inner loads %d, want 1", inner.snapCalls.Load())
				}
			})
		})
	}
}

package cache

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
)

// walkLog records when each walk of a fake started and the request id
// its context carried.
type walkLog struct {
	mu     sync.Mutex
	starts []time.Time
	ids    []string
}

func (w *walkLog) add(ctx context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.starts = append(w.starts, time.Now())
	w.ids = append(w.ids, upstream.CallerIDsFrom(ctx).RequestID)
}

func (w *walkLog) n() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.starts)
}

// gaps are the times between the starts of consecutive walks.
func (w *walkLog) gaps() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(w.starts); i++ {
		out = append(out, w.starts[i].Sub(w.starts[i-1]))
	}
	return out
}

// slowVersioned is newVersioned(n) whose walks take took and are logged.
func slowVersioned(n int, took time.Duration) (*versioned, *walkLog) {
	inner, log := newVersioned(n), &walkLog{}
	load := inner.snapshot
	inner.snapshot = func(ctx context.Context) (*upstream.Snapshot, error) {
		log.add(ctx)
		select {
		case <-time.After(took):
		case <-ctx.Done():
			return nil, &upstream.Error{Kind: upstream.Timeout, Err: ctx.Err()}
		}
		if st := upstream.WalkStatsFrom(ctx); st != nil {
			st.Page(n) // a walk of one page
		}
		return load(ctx)
	}
	return inner, log
}

// docs/contract.md section 24: with no request at all, the cache walks at
// start and then TTL after each walk ended; requests in between, past
// the TTL included, start none; each walk sends a request id of its own,
// req_ and 24 characters, a new one per walk, named on its log line.
func TestWalksFollowTheClockNotTheTraffic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner, walks := slowVersioned(3, 5*time.Second)
		log, logs := testkit.NewLogger()
		c := New(inner, Config{Now: onTheDay(), TTL: 30 * time.Second, Stale: 5 * time.Minute, Logger: log})
		defer c.Close()
		c.Schedule(context.Background())
		c.Schedule(context.Background()) // a second call does nothing
		synctest.Wait()
		if n := walks.n(); n != 1 {
			t.Fatalf("%d walks at start; want 1", n)
		}
		time.Sleep(5 * time.Second) // the first walk ends
		for range 3 {
			time.Sleep(30*time.Second - time.Nanosecond)
			synctest.Wait()
			before := walks.n()
			for range 100 { // requests at the TTL's edge start nothing
				if _, err := c.Snapshot(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			synctest.Wait()
			if n := walks.n(); n != before {
				t.Fatalf("%d walks after 100 requests; want %d: requests never start one", n, before)
			}
			time.Sleep(time.Nanosecond) // TTL after the last walk ended
			synctest.Wait()
			if n := walks.n(); n != before+1 {
				t.Fatalf("%d walks TTL after the last ended; want %d", n, before+1)
			}
			for range 10 { // past TTL while it runs: the held snapshot answers
				if _, err := c.Snapshot(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(5 * time.Second) // it ends
		}
		synctest.Wait()
		for _, g := range walks.gaps() {
			if g != 35*time.Second {
				t.Errorf("walks %v apart; want 35 s (a walk of 5 s, then the TTL)", walks.gaps())
				break
			}
		}
		id := regexp.MustCompile(`^req_[A-Za-z0-9]{24}$`)
		seen := map[string]bool{}
		for _, rid := range walks.ids {
			if !id.MatchString(rid) || seen[rid] {
				t.Errorf("walk request ids %q; want req_ and 24 characters, one per walk", walks.ids)
			}
			seen[rid] = true
			if !strings.Contains(logs.String(), "request_id="+rid) {
				t.Errorf("no walk log line names %s:\n%s", rid, logs)
			}
		}
	})
}

// The scheduler stops with its context (and with Close): no goroutine of
// it outlives either (synctest.Test fails on a goroutine left blocked).
func TestScheduleStopsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner, walks := slowVersioned(3, time.Second)
		c := New(inner, Config{Now: onTheDay(), TTL: 30 * time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		c.Schedule(ctx)
		time.Sleep(10 * time.Second)
		cancel() // waiting for the next walk
		synctest.Wait()
		time.Sleep(time.Hour)
		if n := walks.n(); n != 1 {
			t.Fatalf("%d walks after the context ended; want the first only", n)
		}
	})
	// The context ending during a walk (a SIGTERM: the edge drains) lets
	// that walk end, for the requests that wait for it; no walk follows.
	synctest.Test(t, func(t *testing.T) {
		inner, walks := slowVersioned(3, 10*time.Second)
		c := New(inner, Config{Now: onTheDay(), TTL: 30 * time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		c.Schedule(ctx)
		time.Sleep(5 * time.Second)
		cancel()
		if s, err := c.Snapshot(context.Background()); err == nil || s != nil {
			// waits 2 s: the walk goes on
			t.Fatalf("5 s into the walk: %v; want a 503 while it goes on", err)
		}
		time.Sleep(time.Hour)
		if n := walks.n(); n != 1 || c.Len() != 3 {
			t.Fatalf("%d walks, %d held; want the walk under way ended and held, none after", n, c.Len())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		inner, _ := slowVersioned(3, time.Hour)
		c := New(inner, Config{Now: onTheDay(), TTL: 30 * time.Second})
		c.Schedule(context.Background())
		synctest.Wait()
		c.Close() // during a walk: it ends, and the scheduler with it
	})
}

// A failed walk is walked again after a back-off doubling from 1 s up to
// the TTL, never back to back, whatever the requests do; a success walks
// on the TTL again.
func TestFailedWalksBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner, walks := slowVersioned(3, 0)
		inner.fail.Store(&upstream.Error{Kind: upstream.BadGateway, Err: errors.New("pms down")})
		c := New(inner, Config{Now: onTheDay(), TTL: 20 * time.Second})
		defer c.Close()
		c.Schedule(context.Background())
		for range 8 * 60 {
			time.Sleep(250 * time.Millisecond)
			_, _ = c.Snapshot(context.Background()) // requests all along
		}
		inner.fail.Store(nil)
		time.Sleep(time.Minute)
		synctest.Wait()
		// Failures at 0, 1, 3, 7, 15, 31, 51, 71, 91, 111 s; the walk at
		// 131 s succeeds, and the next ones follow the TTL.
		want := []time.Duration{1, 2, 4, 8, 16, 20, 20, 20, 20, 20, 20, 20}
		got := walks.gaps()
		if len(got) != len(want) {
			t.Fatalf("walks apart by %v; want %v s", got, want)
		}
		for i, w := range want {
			if got[i] != w*time.Second {
				t.Fatalf("walks apart by %v; want %v s", got, want)
			}
		}
		if c.Len() != 3 {
			t.Fatalf("%d held after the PMS recovered; want 3", c.Len())
		}
	})
	// The PMS's Retry-After, longer than the back-off, is honoured.
	synctest.Test(t, func(t *testing.T) {
		inner, walks := slowVersioned(3, 0)
		inner.fail.Store(&upstream.Error{Kind: upstream.Unavailable, RetryAfter: 7 * time.Second})
		c := New(inner, Config{Now: onTheDay(), TTL: time.Minute})
		defer c.Close()
		c.Schedule(context.Background())
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if g := walks.gaps(); len(g) < 2 || g[0] != 7*time.Second || g[1] != 7*time.Second {
			t.Fatalf("walks apart by %v; want the PMS's 7 s", g)
		}
	})
}

// docs/contract.md section 24: a request without a snapshot waits for the
// walk under way at most 2 s (or its deadline), then gets Unavailable
// with the walk's expected remaining time: for a first-ever walk the time
// it has run so far, else from the last walk's length (this process's,
// or LastWalk's); within 1..60 s.
func TestNoSnapshotWaitsTwoSecondsThenRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner, _ := slowVersioned(3, 20*time.Second)
		c := New(inner, Config{Now: onTheDay(), TTL: 30 * time.Second})
		defer c.Close()
		c.Schedule(context.Background())
		time.Sleep(3 * time.Second)
		start := time.Now()
		_, err := c.Snapshot(context.Background())
		var ue *upstream.Error
		if !errors.As(err, &ue) || ue.Kind != upstream.Unavailable || ue.RetryAfter != 5*time.Second {
			t.Fatalf("request 3 s into a first walk: %v; want Unavailable, Retry-After 5 s (the time it has run)", err)
		}
		if waited := time.Since(start); waited != 2*time.Second {
			t.Fatalf("waited %v; want 2 s", waited)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		start = time.Now()
		if _, err = c.Property(ctx, propertyID(1)); !errors.As(err, &ue) || ue.Kind != upstream.Unavailable {
			t.Fatalf("get with a deadline of 500 ms: %v; want Unavailable", err)
		}
		if waited := time.Since(start); waited != 500*time.Millisecond {
			t.Fatalf("waited %v; want its deadline, 500 ms", waited)
		}
		time.Sleep(20 * time.Second)
		if _, err := c.Snapshot(context.Background()); err != nil {
			t.Fatalf("after the first walk: %v", err)
		}
		if l := c.LastWalk(); l != 20*time.Second {
			t.Fatalf("LastWalk %v; want the first walk's 20 s, for a later start", l)
		}
		time.Sleep(34500 * time.Millisecond) // 10 s into the second walk, the first's length known
		if ra := c.walks.retryAfter(c.cfg.Now(), nil); ra != 10*time.Second {
			t.Fatalf("10 s into a walk after one of 20 s: Retry-After %v; want 10 s", ra)
		}
	})
	// A length kept elsewhere (LastWalk) counts for a first walk; the
	// bounds hold.
	synctest.Test(t, func(t *testing.T) {
		inner, _ := slowVersioned(3, 10*time.Minute)
		c := New(inner, Config{Now: onTheDay(), TTL: 30 * time.Second, LastWalk: func() time.Duration { return 45 * time.Second }})
		defer c.Close()
		c.Schedule(context.Background())
		time.Sleep(10 * time.Second)
		var ue *upstream.Error
		if _, err := c.Snapshot(context.Background()); !errors.As(err, &ue) || ue.RetryAfter != 33*time.Second {
			t.Fatalf("12 s into a walk whose last took 45 s: %v; want Retry-After 33 s", err)
		}
		time.Sleep(time.Minute)
		if _, err := c.Snapshot(context.Background()); !errors.As(err, &ue) || ue.RetryAfter != time.Second {
			t.Fatalf("past the expected length: %v; want Retry-After 1 s", err)
		}
		c2 := New(inner, Config{Now: onTheDay(), TTL: 30 * time.Second})
		defer c2.Close()
		c2.Schedule(context.Background())
		time.Sleep(5 * time.Minute)
		if _, err := c2.Snapshot(context.Background()); !errors.As(err, &ue) || ue.RetryAfter != time.Minute {
			t.Fatalf("a first walk 5 min long: %v; want Retry-After 60 s at most", err)
		}
	})
}

// A demo-sized walk answers the first request: it waits for the walk.
func TestFirstRequestWaitsForAShortWalk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner, walks := slowVersioned(3, 300*time.Millisecond)
		c := New(inner, Config{Now: onTheDay(), TTL: 30 * time.Second})
		defer c.Close()
		c.Schedule(context.Background())
		s, err := c.Snapshot(context.Background())
		if err != nil || len(s.Active) != 3 {
			t.Fatalf("first request: %v; want the first walk's snapshot", err)
		}
		if it, err := c.Property(context.Background(), propertyID(2)); err != nil || it.ID != propertyID(2) {
			t.Fatalf("get: %v", err)
		}
		if walks.n() != 1 {
			t.Fatalf("%d walks; want 1", walks.n())
		}
	})
}

// docs/contract.md section 24: a first walk failing on time (the walk's
// budget, a stalled PMS) or held back is 503 with a Retry-After, never
// 504; one the PMS answered badly is 502. Requests wait for the walk
// under way, and get the failure of the last when none runs.
func TestFirstWalkFailingOnTimeIsUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner, walks := slowVersioned(3, time.Hour) // a stalled PMS
		c := New(inner, Config{Now: onTheDay(), TTL: 30 * time.Second, WalkTimeout: 8 * time.Second})
		defer c.Close()
		c.Schedule(context.Background())
		time.Sleep(7 * time.Second)
		var ue *upstream.Error
		_, err := c.Snapshot(context.Background()) // waits; the walk fails at 8 s
		if !errors.As(err, &ue) || ue.Kind != upstream.Unavailable || ue.RetryAfter < time.Second {
			t.Fatalf("the walk failed on time while the request waited: %v; want Unavailable with Retry-After", err)
		}
		time.Sleep(500 * time.Millisecond) // backing off: no walk runs
		start := time.Now()
		if _, err := c.Property(context.Background(), propertyID(1)); !errors.As(err, &ue) || ue.Kind != upstream.Unavailable ||
			ue.RetryAfter != 8500*time.Millisecond {
			t.Fatalf("after a walk failed on time: %v; want Unavailable, Retry-After 8.5 s (the back-off left and the failed walk's length)", err)
		}
		if time.Since(start) != 0 {
			t.Fatalf("waited %v with no walk under way; want an answer at once", time.Since(start))
		}
		if walks.n() != 1 {
			t.Fatalf("%d walks; want 1 before the back-off ends", walks.n())
		}
	})
	for _, kind := range []upstream.Kind{upstream.BadGateway, upstream.Internal} {
		synctest.Test(t, func(t *testing.T) {
			inner, _ := slowVersioned(3, 0)
			inner.fail.Store(&upstream.Error{Kind: kind, Err: errors.New("malformed page")})
			c := New(inner, Config{Now: onTheDay(), TTL: 30 * time.Second})
			defer c.Close()
			c.Schedule(context.Background())
			synctest.Wait()
			if _, err := c.Snapshot(context.Background()); upstream.KindOf(err) != kind {
				t.Fatalf("after a walk failed with %v: %v; want %v", kind, err, kind)
			}
		})
	}
}

// With a snapshot held, a walk failing keeps it serving (stale past the
// TTL) and an id it lacks is the walk's failure, not NotFound; no request
// walks.
func TestScheduledFailureServesTheHeldSnapshot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner, walks := slowVersioned(3, 0)
		o := &outcomes{}
		c := New(inner, Config{Now: onTheDay(), TTL: 30 * time.Second, Stale: 5 * time.Minute, OnOutcome: o.record})
		defer c.Close()
		c.Schedule(context.Background())
		synctest.Wait()
		inner.fail.Store(&upstream.Error{Kind: upstream.BadGateway})
		time.Sleep(31 * time.Second)
		if _, err := c.Snapshot(context.Background()); err != nil {
			t.Fatal(err)
		}
		if o.get(OutcomeStale) != 1 {
			t.Fatalf("outcomes %v; want stale after the walk on the TTL failed", o.n)
		}
		if _, err := c.Property(context.Background(), propertyID(99)); upstream.KindOf(err) == upstream.NotFound {
			t.Fatalf("an id the stale snapshot lacks: %v; want the walk's failure", err)
		}
		before := walks.n()
		time.Sleep(5 * time.Minute) // past Stale: the failure is the answer
		if _, err := c.Snapshot(context.Background()); upstream.KindOf(err) != upstream.BadGateway {
			t.Fatalf("past Stale with failing walks: %v; want the walk's BadGateway", err)
		}
		if walks.n() <= before {
			t.Fatalf("no walk retried in 5 min")
		}
	})
}

// With TTL 0 nothing is held and each read walks for itself, but the
// walks on the clock run every WalkEvery (30 s) for the feed, and Await,
// the feed's question, never walks: 100 of them make no walk.
func TestNoCacheStillWalksOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner, walks := slowVersioned(3, time.Second)
		c := New(inner, Config{Now: onTheDay(), TTL: 0})
		defer c.Close()
		c.Schedule(context.Background())
		if err := c.Await(context.Background()); err != nil {
			t.Fatalf("Await during the first walk (1 s): %v", err)
		}
		for range 100 {
			if err := c.Await(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		if n := walks.n(); n != 1 {
			t.Fatalf("%d walks after 100 Awaits; want the scheduled one", n)
		}
		time.Sleep(3*time.Minute + 2*time.Second)
		synctest.Wait()
		if g := walks.gaps(); len(g) != 5 || g[0] != 31*time.Second || g[4] != 31*time.Second {
			t.Fatalf("walks apart by %v; want 31 s (a walk of 1 s, then 30 s)", g)
		}
		if _, err := c.Snapshot(context.Background()); err != nil { // a read's own walk
			t.Fatal(err)
		}
		if n := walks.n(); n != 7 {
			t.Fatalf("%d walks; want a read's own with TTL 0", n)
		}
	})
	// Without a snapshot, Await waits 2 s then answers 503.
	synctest.Test(t, func(t *testing.T) {
		inner, _ := slowVersioned(3, time.Minute)
		c := New(inner, Config{Now: onTheDay(), TTL: 30 * time.Second})
		defer c.Close()
		c.Schedule(context.Background())
		var ue *upstream.Error
		if err := c.Await(context.Background()); !errors.As(err, &ue) || ue.Kind != upstream.Unavailable {
			t.Fatalf("Await during a first walk of 1 min: %v; want Unavailable", err)
		}
	})
}

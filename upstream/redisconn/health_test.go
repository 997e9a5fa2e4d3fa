package redisconn

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// untilState advances the bubble's clock a second at a time until g's
// state is want, and returns how long that took (at most limit).
func untilState(t *testing.T, g interface{ State() upstream.BreakerState }, want upstream.BreakerState, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for g.State() != want {
		if time.Since(start) >= limit {
			t.Fatalf("state %v after %v, want %v", g.State(), limit, want)
		}
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
	}
	return time.Since(start)
}

// docs/contract.md section 17: with no request at all, the state the admin
// listener shows follows Redis within 5 s both ways, for a Redis that
// refuses writes and for one that stops answering; the watch ends with
// its context.
func TestWatchKeepsIdleStateFresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newTestGuard(t, testkit.NewTelemetry(t), &testkit.LogBuffer{})
		var mode atomic.Int32 // 0 accepts writes, 1 refuses them, 2 does not answer
		write := func(ctx context.Context) error {
			switch mode.Load() {
			case 1:
				return replyErr("NOREPLICAS Not enough good replicas to write.")
			case 2:
				<-ctx.Done()
				return ctx.Err()
			}
			return nil
		}
		g.setProbe(write)
		var probes atomic.Int64
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			watch(ctx, time.Second, func(ctx context.Context) { probes.Add(1); _ = g.Probe(ctx, write) })
		}()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if n := probes.Load(); n != 10 || g.State() != upstream.BreakerClosed {
			t.Fatalf("%d probes in 10 s (want 10), state %v (want closed)", n, g.State())
		}

		mode.Store(1)
		if d := untilState(t, g, upstream.BreakerOpen, 5*time.Second); d > time.Second {
			t.Errorf("a refusal of writes shown after %v, want within the probe interval (1 s)", d)
		}
		mode.Store(0)
		untilState(t, g, upstream.BreakerClosed, 5*time.Second)

		mode.Store(2)
		untilState(t, g, upstream.BreakerOpen, 5*time.Second)
		mode.Store(0)
		untilState(t, g, upstream.BreakerClosed, 5*time.Second)

		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("watch still runs after its context ended")
		}
	})
}

// docs/contract.md section 17, on a real redis-server: an idle client's State says
// unavailable once Redis refuses writes (min-replicas-to-write with no
// replica: NOREPLICAS), and available again once Redis accepts them. The
// 5 s of the contract are asserted on the bubble's clock
// (TestWatchKeepsIdleStateFresh); here the wall clock only bounds the wait.
func TestWatchSeesRedisRefuseWrites(t *testing.T) {
	srv := redistest.Start(t)
	c, err := New(Config{URL: srv.URL()}) // the production guard
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); c.Watch(ctx, 0) }()
	t.Cleanup(func() { cancel(); <-done })

	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	within := func(want upstream.BreakerState, what string) {
		t.Helper()
		start := time.Now()
		testkit.Eventually(t, what+": state "+want.String(), func() bool { return c.State() == want })
		t.Logf("%s: state %v after %v", what, want, time.Since(start).Round(time.Millisecond))
	}
	within(upstream.BreakerClosed, "at start")
	if err := admin.ConfigSet(t.Context(), "min-replicas-to-write", "1").Err(); err != nil {
		t.Fatal(err)
	}
	within(upstream.BreakerOpen, "Redis refusing writes")
	if err := admin.ConfigSet(t.Context(), "min-replicas-to-write", "0").Err(); err != nil {
		t.Fatal(err)
	}
	within(upstream.BreakerClosed, "Redis accepting writes again")
}

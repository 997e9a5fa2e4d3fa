package redisconn

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
)

func newTestGuard(t *testing.T, tl *testkit.Telemetry, log *testkit.LogBuffer) *Guard {
	t.Helper()
	m, err := NewMetrics(tl.Meter, "127.0.0.1", 6379)
	if err != nil {
		t.Fatal(err)
	}
	g, err := NewGuard(GuardConfig{CallTimeout: 50 * time.Millisecond, ConsecutiveFailures: 3, OpenTimeout: 2 * time.Second}, log.Logger(), m)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// slow stands for a Redis that never answers: it waits for the deadline.
func slow(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }

func ok(context.Context) error { return nil }

func TestGuardOpensFailsFastAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tl, log := testkit.NewTelemetry(t), &testkit.LogBuffer{}
		g := newTestGuard(t, tl, log)

		for i := range 3 {
			start := time.Now()
			err := g.Do(t.Context(), slow)
			if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("call %d: %v, want ErrUnavailable wrapping the deadline", i, err)
			}
			if d := time.Since(start); d != 50*time.Millisecond {
				t.Fatalf("call %d took %v, want the 50ms call timeout", i, d)
			}
		}
		if g.State() != upstream.BreakerOpen {
			t.Fatalf("state %v after 3 timeouts, want open", g.State())
		}
		called := false
		start := time.Now()
		err := g.Do(t.Context(), func(context.Context) error { called = true; return nil })
		if !errors.Is(err, ErrUnavailable) || called || time.Since(start) != 0 {
			t.Fatalf("open breaker: err %v, called %v, took %v; want a fast ErrUnavailable", err, called, time.Since(start))
		}
		if got := tl.Counter(t, "partner_edge.redis.errors", "kind", "timeout"); got != 3 {
			t.Fatalf("timeout errors %d, want 3", got)
		}
		if got := tl.Counter(t, "partner_edge.redis.errors", "kind", "rejected"); got != 1 {
			t.Fatalf("rejected errors %d, want 1", got)
		}
		if got := tl.Gauge(t, "partner_edge.redis.breaker.state"); got != int64(upstream.BreakerOpen) {
			t.Fatalf("breaker gauge %d, want open", got)
		}

		time.Sleep(2*time.Second + time.Millisecond) // the bubble's clock: past the open timeout; Redis is back
		if g.State() != upstream.BreakerHalfOpen {
			t.Fatalf("state %v after the open timeout, want half-open", g.State())
		}
		// Half-open: a request's call is never the trial (docs/contract.md
		// section 21); it falls back at once, without calling Redis.
		called = false
		start = time.Now()
		if err := g.Do(t.Context(), func(context.Context) error { called = true; return nil }); !errors.Is(err, ErrUnavailable) || called || time.Since(start) != 0 {
			t.Fatalf("half-open breaker, a request's call: err %v, called %v, took %v; want a fast ErrUnavailable", err, called, time.Since(start))
		}
		if g.State() != upstream.BreakerHalfOpen {
			t.Fatalf("state %v after a request's call, want still half-open", g.State())
		}
		if err := g.Probe(t.Context(), ok); err != nil {
			t.Fatalf("probe: %v", err)
		}
		if g.State() != upstream.BreakerClosed {
			t.Fatalf("state %v after a good probe, want closed", g.State())
		}
		if got := tl.Gauge(t, "partner_edge.redis.breaker.state"); got != int64(upstream.BreakerClosed) {
			t.Fatalf("breaker gauge %d, want closed", got)
		}
		// Logged once per transition: closed->open, open->half-open,
		// half-open->closed (Redis answers again).
		if n := log.Count("from="); n != 3 || log.Count("redis answers again") != 1 {
			t.Fatalf("%d transition lines, want 3:\n%s", n, log.String())
		}
		if n := log.Count("level=WARN"); n != 1 {
			t.Fatalf("%d WARN lines, want 1 (the opening)", n)
		}
	})
}

func TestGuardFailedProbeReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tl, log := testkit.NewTelemetry(t), &testkit.LogBuffer{}
		g := newTestGuard(t, tl, log)
		for range 3 {
			_ = g.Do(t.Context(), slow)
		}
		time.Sleep(2*time.Second + time.Millisecond) // the bubble's clock: past the open timeout
		if err := g.Probe(t.Context(), slow); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("failed probe: %v", err)
		}
		if g.State() != upstream.BreakerOpen {
			t.Fatalf("state %v after a failed probe, want open", g.State())
		}
	})
}

func TestGuardCallerCancellationIsNotCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newTestGuard(t, testkit.NewTelemetry(t), &testkit.LogBuffer{})
		for range 5 {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
			err := g.Do(ctx, slow)
			cancel()
			if errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("caller's deadline: %v, want the caller's own error", err)
			}
		}
		if g.State() != upstream.BreakerClosed {
			t.Fatalf("state %v after the callers' own deadlines, want closed", g.State())
		}
	})
}

func TestGuardClassifiesReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newTestGuard(t, testkit.NewTelemetry(t), &testkit.LogBuffer{})
		for range 5 {
			if err := g.Do(t.Context(), func(context.Context) error { return redis.Nil }); err != redis.Nil {
				t.Fatalf("redis.Nil came back as %v", err)
			}
			if err := g.Do(t.Context(), func(context.Context) error { return replyErr("ERR wrong number of arguments") }); err == nil || errors.Is(err, ErrUnavailable) {
				t.Fatalf("error reply came back as %v, want it as is", err)
			}
			_ = g.Do(t.Context(), func(context.Context) error { return redis.ErrClosed })
			if err := g.Do(t.Context(), ok); err != nil {
				t.Fatal(err)
			}
		}
		if g.State() != upstream.BreakerClosed {
			t.Fatalf("state %v, want closed: no three failures in a row", g.State())
		}
		for range 3 {
			if err := g.Do(t.Context(), func(context.Context) error { return redis.ErrClosed }); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("closed client: %v, want ErrUnavailable", err)
			}
		}
		if g.State() != upstream.BreakerOpen {
			t.Fatalf("state %v after 3 connection failures, want open", g.State())
		}
	})
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		err    error
		kind   ErrorKind
		failed bool
	}{
		{nil, "", false},
		{redis.Nil, "", false},
		{replyErr("ERR unknown command"), ErrReply, false},
		{replyErr("WRONGTYPE Operation against a key"), ErrReply, false},
		{replyErr("READONLY You can't write against a read only replica."), ErrReply, true},
		{replyErr("LOADING Redis is loading the dataset in memory"), ErrReply, true},
		{context.DeadlineExceeded, ErrTimeout, true},
		{redis.ErrClosed, ErrConnection, true},
	} {
		kind, failed := classify(c.err)
		if kind != c.kind || failed != c.failed {
			t.Errorf("classify(%v) = %q, %v; want %q, %v", c.err, kind, failed, c.kind, c.failed)
		}
	}
}

// replyErr is an error reply of Redis.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// The zero GuardConfig takes the documented defaults; negative durations
// are refused.
func TestZeroGuardConfig(t *testing.T) {
	cfg, err := GuardConfig{}.withDefaults()
	if err != nil || cfg.CallTimeout != DefaultCallTimeout || cfg.OpenTimeout != DefaultOpenTimeout ||
		cfg.ConsecutiveFailures != DefaultConsecutiveFailures {
		t.Fatalf("zero config: %+v, %v; want the defaults", cfg, err)
	}
	g, err := NewGuard(GuardConfig{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Do(t.Context(), func(context.Context) error { return nil }); err != nil {
		t.Fatalf("a call through the zero guard: %v", err)
	}
	for _, bad := range []GuardConfig{{CallTimeout: -time.Second}, {OpenTimeout: -time.Second}} {
		if _, err := NewGuard(bad, nil, nil); err == nil {
			t.Errorf("%+v: guard made, want an error", bad)
		}
	}
}

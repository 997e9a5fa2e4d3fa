package ratelimit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream/fleet"
	"github.com/partner-edge/partner-edge/upstream/fleet/redistest"
)

type fallbackCount map[fleet.Use]int

func (f fallbackCount) Fallback(_ context.Context, use fleet.Use, _ error) { f[use]++ }

func newRedisLimiter(t *testing.T, url string) (*Redis, fallbackCount) {
	t.Helper()
	// A call timeout far above a loaded machine's Redis round trip: these
	// tests check decisions, not the guard's deadline (fleet's own tests do).
	c, err := fleet.New(fleet.Config{URL: url, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Guard: fleet.GuardConfig{CallTimeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	fc := fallbackCount{}
	r := NewRedis(c, "aurora")
	r.count = fc
	return r, fc
}

// The Redis limiter decides as the in-process one does (same GCRA, same
// Decision fields, so the same RateLimit headers and 429s), for quotas and
// for the failed-auth throttle's peeks.
func TestRedisLimiterMatchesLocal(t *testing.T) {
	srv := redistest.Start(t)
	rl, fc := newRedisLimiter(t, srv.URL())
	local := NewLocal(nil, 0)
	ctx := t.Context()
	l := Limit{PerSecond: 5, Burst: 5}
	const tol = 50 * time.Millisecond
	near := func(a, b time.Duration) bool { return a-b < tol && b-a < tol }
	for _, key := range []Key{{APIKey, "key_0001"}, {Address, "192.0.2.7"}} {
		for i, n := range []int{0, 1, 1, 1, 1, 1, 1, 0, 1} {
			want, _ := local.AllowN(ctx, key, l, n)
			got, err := rl.AllowN(ctx, key, l, n)
			if err != nil {
				t.Fatal(err)
			}
			if got.Allowed != want.Allowed || got.Remaining != want.Remaining ||
				!near(got.RetryAfter, want.RetryAfter) || !near(got.ResetAfter, want.ResetAfter) {
				t.Errorf("%v call %d (n=%d): redis %+v, local %+v", key, i, n, got, want)
			}
		}
	}
	if len(fc) != 0 {
		t.Errorf("fallbacks counted while Redis was up: %v", fc)
	}
	// Buckets are prefixed with the brand: another brand's key is fresh.
	other := &Redis{c: rl.c, brand: "borealis", count: fc}
	if d, err := other.AllowN(ctx, Key{APIKey, "key_0001"}, l, 0); err != nil || d.Remaining != 5 {
		t.Errorf("another brand's bucket: %+v, %v; want full", d, err)
	}
}

// With Redis down the limiter errs at once (the edge then decides
// in-process) and counts the fallback by use.
func TestRedisLimiterDownCountsFallbacks(t *testing.T) {
	srv := redistest.Start(t)
	rl, fc := newRedisLimiter(t, srv.URL())
	srv.Stop()
	l := Limit{PerSecond: 5, Burst: 5}
	if _, err := rl.AllowN(t.Context(), Key{APIKey, "key_0001"}, l, 1); !errors.Is(err, fleet.ErrUnavailable) {
		t.Fatalf("Redis down: %v; want ErrUnavailable", err)
	}
	if _, err := rl.AllowN(t.Context(), Key{Address, "192.0.2.7"}, l, 0); err == nil {
		t.Fatal("Redis down: peek answered")
	}
	if fc[fleet.UseRateLimit] != 1 || fc[fleet.UseAuthThrottle] != 1 {
		t.Fatalf("fallbacks %v; want one of each use", fc)
	}
}

// Two instances on one Redis share each bucket.
func TestRedisLimiterIsSharedByInstances(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := newRedisLimiter(t, srv.URL())
	b, _ := newRedisLimiter(t, srv.URL())
	key, l := Key{APIKey, "key-1"}, Limit{PerSecond: 1, Burst: 5}
	ctx := t.Context()

	if d, err := a.AllowN(ctx, key, l, 0); err != nil || !d.Allowed || d.Remaining != 5 {
		t.Fatalf("peek of a fresh key: %+v, %v", d, err)
	}
	allowed := 0
	for i := range 10 {
		lim := a
		if i%2 == 1 {
			lim = b
		}
		d, err := lim.AllowN(ctx, key, l, 1)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			allowed++
		} else if d.RetryAfter <= 0 || d.RetryAfter > time.Second {
			t.Fatalf("denied with RetryAfter %v, want (0, 1s]", d.RetryAfter)
		}
	}
	if allowed != 5 {
		t.Fatalf("two instances allowed %d of 10 at burst 5, want 5 in all", allowed)
	}
	d, err := b.AllowN(ctx, key, l, 0)
	if err != nil || d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > time.Second {
		t.Fatalf("peek of a spent key: %+v, %v; want not allowed, RetryAfter in (0, 1s]", d, err)
	}
	if d2, _ := b.AllowN(ctx, key, l, 0); d2.Allowed {
		t.Fatal("peek consumed or refilled")
	}
	if _, err := a.allowN(ctx, "pe:rl:acme:key-1", Limit{}, 1); !errors.Is(err, ErrBadLimit) {
		t.Fatalf("zero limit: %v, want ErrBadLimit", err)
	}
}

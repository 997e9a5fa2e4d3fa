package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/upstream/fleet"
	"github.com/partner-edge/partner-edge/upstream/fleet/redistest"
)

type fallbackCount map[fleet.Use]int

func (f fallbackCount) Fallback(_ context.Context, use fleet.Use, _ error) { f[use]++ }

func newRedisLimiter(t *testing.T, url string) (*redisLimiter, fallbackCount) {
	t.Helper()
	c, err := fleet.New(fleet.Config{URL: url, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	fc := fallbackCount{}
	return &redisLimiter{lim: fleet.NewRedisLimiter(c), brand: "aurora", count: fc}, fc
}

// The Redis limiter decides as the in-process one does (same GCRA, same
// Decision fields, so the same RateLimit headers and 429s), for quotas and
// for the failed-auth throttle's peeks.
func TestRedisLimiterMatchesLocal(t *testing.T) {
	srv := redistest.Start(t)
	rl, fc := newRedisLimiter(t, srv.URL())
	local := edge.NewLocalLimiter(nil, 0)
	ctx := t.Context()
	l := edge.Limit{Rate: 5, Burst: 5}
	const tol = 50 * time.Millisecond
	near := func(a, b time.Duration) bool { return a-b < tol && b-a < tol }
	for _, key := range []string{"key_0001", "addr:192.0.2.7"} {
		for i, n := range []int{0, 1, 1, 1, 1, 1, 1, 0, 1} {
			want, _ := local.AllowN(ctx, key, l, n)
			got, err := rl.AllowN(ctx, key, l, n)
			if err != nil {
				t.Fatal(err)
			}
			if got.Allowed != want.Allowed || got.Remaining != want.Remaining ||
				!near(got.RetryAfter, want.RetryAfter) || !near(got.ResetAfter, want.ResetAfter) {
				t.Errorf("%s call %d (n=%d): redis %+v, local %+v", key, i, n, got, want)
			}
		}
	}
	if len(fc) != 0 {
		t.Errorf("fallbacks counted while Redis was up: %v", fc)
	}
	// Buckets are prefixed with the brand: another brand's key is fresh.
	other := &redisLimiter{lim: rl.lim, brand: "borealis", count: fc}
	if d, err := other.AllowN(ctx, "key_0001", l, 0); err != nil || d.Remaining != 5 {
		t.Errorf("another brand's bucket: %+v, %v; want full", d, err)
	}
}

// With Redis down the limiter errs at once (the edge then decides
// in-process) and counts the fallback by use.
func TestRedisLimiterDownCountsFallbacks(t *testing.T) {
	srv := redistest.Start(t)
	rl, fc := newRedisLimiter(t, srv.URL())
	srv.Stop()
	l := edge.Limit{Rate: 5, Burst: 5}
	if _, err := rl.AllowN(t.Context(), "key_0001", l, 1); !errors.Is(err, fleet.ErrUnavailable) {
		t.Fatalf("Redis down: %v; want ErrUnavailable", err)
	}
	if _, err := rl.AllowN(t.Context(), "addr:192.0.2.7", l, 0); err == nil {
		t.Fatal("Redis down: peek answered")
	}
	if fc[fleet.UseRateLimit] != 1 || fc[fleet.UseAuthThrottle] != 1 {
		t.Fatalf("fallbacks %v; want one of each use", fc)
	}
}

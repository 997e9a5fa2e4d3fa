package redislimit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// countingClient is a redisconn.Client that counts its round trips and the
// fallbacks its user reports.
type countingClient struct {
	*redisconn.Client
	calls     atomic.Int64
	fallbacks [2]atomic.Int64 // rate_limit, auth_throttle
}

func (c *countingClient) Do(ctx context.Context, fn func(ctx context.Context, rdb redis.UniversalClient) error) error {
	c.calls.Add(1)
	return c.Client.Do(ctx, fn)
}

func (c *countingClient) Fallback(_ context.Context, use redisconn.Use, _ error) {
	if use == redisconn.UseAuthThrottle {
		c.fallbacks[1].Add(1)
	} else {
		c.fallbacks[0].Add(1)
	}
}

// newClient is a client of url closed when the test ends. The call
// timeout is far above a loaded machine's round trip: these tests check
// decisions, not the guard (fleet's own tests do).
func newClient(t *testing.T, url string) *countingClient {
	t.Helper()
	c, err := redisconn.New(redisconn.Config{URL: url, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Guard: redisconn.GuardConfig{CallTimeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &countingClient{Client: c}
}

// newLimiter is a limiter on its own client of url, on the test's clock
// (synctest's inside a bubble), closed when the test ends.
func newLimiter(t *testing.T, url string, brand string) (*Limiter, *countingClient) {
	t.Helper()
	c := newClient(t, url)
	l := New(Config{Client: c, Brand: brand, Now: time.Now})
	t.Cleanup(l.Close)
	return l, c
}

func allow(t *testing.T, l *Limiter, key ratelimit.Key, lim ratelimit.Limit, n int) ratelimit.Decision {
	t.Helper()
	d, err := l.AllowN(context.Background(), key, lim, n)
	if err != nil {
		t.Fatalf("AllowN: %v", err)
	}
	return d
}

// A burst taken at once: the first calls ask Redis (for more and more
// units ahead of need), then the instance answers alone: the burst is
// allowed, Remaining falls by one a call and never rises, and the
// refusals past it cost no round trip. One refill later the bucket has
// refilled by a unit and the instance took it in the background.
func TestLeaseBurstThenLocalRefusals(t *testing.T) {
	srv := redistest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		l, c := newLimiter(t, srv.URL(), "aurora")
		key, lim := ratelimit.Key{Kind: ratelimit.APIKey, ID: "key_1"}, ratelimit.Limit{PerSecond: 10, Burst: 10}
		prev := lim.Burst
		for i := range 10 {
			d := allow(t, l, key, lim, 1)
			if !d.Allowed || d.Remaining != prev-1 {
				t.Fatalf("call %d: %+v; want allowed with %d remaining", i, d, prev-1)
			}
			prev = d.Remaining
		}
		if n := c.calls.Load(); n > 4 {
			t.Errorf("%d round trips for a burst of 10; want at most 4 (asks grow with demand)", n)
		}
		calls := c.calls.Load()
		for i := range 20 {
			d := allow(t, l, key, lim, 1)
			if d.Allowed || d.Remaining != 0 || d.RetryAfter <= 0 || d.RetryAfter > 200*time.Millisecond {
				t.Fatalf("refusal %d: %+v; want refused, RetryAfter in (0, 200ms]", i, d)
			}
		}
		if n := c.calls.Load() - calls; n != 0 {
			t.Errorf("refusals cost %d round trips; want none", n)
		}
		time.Sleep(Refill + time.Millisecond) // one refill: the bucket gave back one unit
		synctest.Wait()
		if d := allow(t, l, key, lim, 1); !d.Allowed {
			t.Errorf("after a refill: %+v; want allowed", d)
		}
	})
}

// Under steady load below the rate, Redis sees one call per refill
// interval, not one per request; every request is allowed.
func TestLeaseSteadyLoadCallsPerRefill(t *testing.T) {
	srv := redistest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		l, c := newLimiter(t, srv.URL(), "aurora")
		key, lim := ratelimit.Key{Kind: ratelimit.APIKey, ID: "key_1"}, ratelimit.Limit{PerSecond: 1000, Burst: 1000}
		const secs, perSec = 5, 500
		for i := range secs * perSec {
			if d := allow(t, l, key, lim, 1); !d.Allowed {
				t.Fatalf("request %d refused below the rate: %+v", i, d)
			}
			time.Sleep(time.Second / perSec)
		}
		refills := int64(secs * time.Second / Refill)
		if n := c.calls.Load(); n > refills+5 {
			t.Errorf("%d round trips for %d requests in %d s; want at most %d (one per refill, a few to start)", n, secs*perSec, secs, refills+5)
		}
		t.Logf("%d round trips for %d requests", c.calls.Load(), secs*perSec)
	})
}

// Tokens held past the lease are void, and never go back to Redis: the
// bucket does not see them again, the instance cannot spend them.
func TestLeaseTokensExpire(t *testing.T) {
	srv := redistest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		a, _ := newLimiter(t, srv.URL(), "aurora")
		key, lim := ratelimit.Key{Kind: ratelimit.APIKey, ID: "key_1"}, ratelimit.Limit{PerSecond: 0.01, Burst: 20}
		for range 4 { // asks grow, and the next refill takes more: a holds units ahead
			allow(t, a, key, lim, 1)
		}
		time.Sleep(Refill + time.Millisecond)
		synctest.Wait()
		a.mu.RLock()
		e := a.entries[key]
		a.mu.RUnlock()
		e.mu.Lock()
		held, left := e.tokens, e.left
		e.mu.Unlock()
		if held < 1 || held+left+4 != 20 {
			t.Fatalf("held %d, bucket left %d after 4; want some held, 20 in all", held, left)
		}
		time.Sleep(Lease)
		// Another instance finds only what a left: the tokens a held are
		// gone from the bucket for good (0.01/s refills nothing here).
		b, _ := newLimiter(t, srv.URL(), "aurora")
		allowed := 0
		for range 30 {
			if allow(t, b, key, lim, 1).Allowed {
				allowed++
			}
		}
		if allowed != left {
			t.Errorf("another instance was allowed %d; want the %d the bucket held", allowed, left)
		}
		if d := allow(t, a, key, lim, 1); d.Allowed {
			t.Errorf("expired tokens spent: %+v", d)
		}
	})
}

// A peek takes nothing: peeks of a full bucket ask Redis once, then
// never; one failure taken makes the next peeks see the truth.
func TestPeekTakesNothing(t *testing.T) {
	srv := redistest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		l, c := newLimiter(t, srv.URL(), "aurora")
		addr, lim := ratelimit.Key{Kind: ratelimit.Address, ID: "192.0.2.7"}, ratelimit.Limit{PerSecond: 1.0 / 3, Burst: 2}
		for range 50 {
			if d := allow(t, l, addr, lim, 0); !d.Allowed || d.Remaining != 2 {
				t.Fatalf("peek of a full bucket: %+v", d)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if n := c.calls.Load(); n != 1 {
			t.Errorf("%d round trips for 50 peeks of a full bucket; want 1", n)
		}
		allow(t, l, addr, lim, 1)
		allow(t, l, addr, lim, 1)
		d := allow(t, l, addr, lim, 0)
		if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > 3*time.Second+Refill {
			t.Errorf("peek after two failures: %+v; want refused, RetryAfter about 3 s", d)
		}
	})
}

// With Redis down the limiter errs at once (the edge then decides
// in-process) and counts the fallback by use.
func TestRedisDownCountsFallbacks(t *testing.T) {
	srv := redistest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		l, c := newLimiter(t, srv.URL(), "aurora")
		srv.Stop()
		lim := ratelimit.Limit{PerSecond: 5, Burst: 5}
		if _, err := l.AllowN(t.Context(), ratelimit.Key{Kind: ratelimit.APIKey, ID: "key_1"}, lim, 1); !errors.Is(err, redisconn.ErrUnavailable) {
			t.Fatalf("Redis down: %v; want ErrUnavailable", err)
		}
		if _, err := l.AllowN(t.Context(), ratelimit.Key{Kind: ratelimit.Address, ID: "192.0.2.7"}, lim, 0); err == nil {
			t.Fatal("Redis down: peek answered")
		}
		if c.fallbacks[0].Load() != 1 || c.fallbacks[1].Load() != 1 {
			t.Fatalf("fallbacks %d, %d; want one of each use", c.fallbacks[0].Load(), c.fallbacks[1].Load())
		}
	})
}

// Buckets are by brand and kind; an invalid limit allows everything
// without asking; the buckets remembered are bounded, idle ones forgotten.
func TestBucketsNamedAndBounded(t *testing.T) {
	srv := redistest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		a, _ := newLimiter(t, srv.URL(), "aurora")
		b, _ := newLimiter(t, srv.URL(), "borealis")
		lim := ratelimit.Limit{PerSecond: 1, Burst: 1}
		key := ratelimit.Key{Kind: ratelimit.APIKey, ID: "key_1"}
		if !allow(t, a, key, lim, 1).Allowed || allow(t, a, key, lim, 1).Allowed {
			t.Fatal("burst 1: want one allowed")
		}
		if !allow(t, b, key, lim, 1).Allowed {
			t.Error("another brand's bucket is not fresh")
		}
		if !allow(t, a, ratelimit.Key{Kind: ratelimit.Address, ID: "key_1"}, lim, 1).Allowed {
			t.Error("another kind's bucket is not fresh")
		}
		if d := allow(t, a, key, ratelimit.Limit{}, 1); !d.Allowed {
			t.Errorf("invalid limit: %+v", d)
		}

		c := newClient(t, srv.URL())
		small := New(Config{Client: c, Brand: "aurora", Now: time.Now, MaxEntries: 10})
		defer small.Close()
		for i := range 100 {
			allow(t, small, ratelimit.Key{Kind: ratelimit.Address, ID: string(rune('a'+i%26)) + string(rune('a'+i/26))}, lim, 0)
		}
		if n := small.Len(); n > 10 {
			t.Errorf("%d buckets remembered; want at most 10", n)
		}
		time.Sleep(FullAddressKept + Lease)
		synctest.Wait()
		if n := small.Len(); n != 0 {
			t.Errorf("%d buckets remembered after %s idle; want 0", n, FullAddressKept+Lease)
		}
	})
}

// A key used now and then (twice a second here, less than once a refill
// interval) costs about one round trip every other request: a call takes
// a unit ahead of need, spent by the next request within the lease, and
// the refill after a call asks nothing while that unit is held.
func TestSparseKeyCallsEveryOtherRequest(t *testing.T) {
	srv := redistest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		l, c := newLimiter(t, srv.URL(), "aurora")
		key, lim := ratelimit.Key{Kind: ratelimit.APIKey, ID: "key_1"}, ratelimit.Limit{PerSecond: 10, Burst: 10}
		const n = 20
		time.Sleep(Refill / 2) // requests between refills, never at the same instant
		for i := range n {
			if d := allow(t, l, key, lim, 1); !d.Allowed {
				t.Fatalf("request %d refused: %+v", i, d)
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Logf("%d round trips for %d requests", c.calls.Load(), n)
		if got := c.calls.Load(); got > n/2+2 {
			t.Errorf("%d round trips for %d requests; want at most %d", got, n, n/2+2)
		}
	})
}

// Concurrent requests of a key far below its quota are all allowed: those
// that waited for another's call to Redis, and found its units taken by
// the others, ask again instead of being refused (bench/run's fleet row
// saw 60 such 429s of 223,000 at 32 connections before).
func TestConcurrentWaitersNeverRefusedBelowQuota(t *testing.T) {
	srv := redistest.Start(t)
	synctest.Test(t, func(t *testing.T) {
		l, _ := newLimiter(t, srv.URL(), "aurora")
		key, lim := ratelimit.Key{Kind: ratelimit.APIKey, ID: "key_1"}, ratelimit.Limit{PerSecond: 1e6, Burst: 1e6}
		var refused atomic.Int64
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for range 200 {
					d, err := l.AllowN(context.Background(), key, lim, 1)
					if err != nil || !d.Allowed {
						refused.Add(1)
					}
					time.Sleep(time.Millisecond) // 32,000 requests a second, refills between
				}
			})
		}
		wg.Wait()
		if n := refused.Load(); n != 0 {
			t.Errorf("%d of %d requests refused far below the quota", n, 32*200)
		}
	})
}

package ratelimit

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// allowN asks l for n units of the API-key bucket named key.
func allowN(t *testing.T, l Limiter, key string, lim Limit, n int) Decision {
	t.Helper()
	d, err := l.AllowN(context.Background(), Key{APIKey, key}, lim, n)
	if err != nil {
		t.Fatalf("AllowN: %v", err)
	}
	return d
}

// A bucket of burst 3 refilled at 2/s: three at once, then refused with the
// time until the next unit; one unit back after 500 ms, full after 1.5 s.
func TestLocalBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLocal(nil, 0)
		lim := Limit{PerSecond: 2, Burst: 3}
		for i, want := range []int{2, 1, 0} {
			d := allowN(t, l, "k", lim, 1)
			if !d.Allowed || d.Remaining != want {
				t.Fatalf("call %d: %+v, want allowed with %d remaining", i, d, want)
			}
		}
		d := allowN(t, l, "k", lim, 1)
		if d.Allowed || d.Remaining != 0 || d.RetryAfter != 500*time.Millisecond || d.ResetAfter != 1500*time.Millisecond {
			t.Fatalf("over the burst: %+v", d)
		}
		time.Sleep(250 * time.Millisecond) // synctest's clock
		if d := allowN(t, l, "k", lim, 1); d.Allowed || d.RetryAfter != 250*time.Millisecond {
			t.Fatalf("after 250ms: %+v", d)
		}
		time.Sleep(250 * time.Millisecond) // synctest's clock
		d = allowN(t, l, "k", lim, 1)
		if !d.Allowed || d.Remaining != 0 || d.RetryAfter != 500*time.Millisecond || d.ResetAfter != 1500*time.Millisecond {
			t.Fatalf("after 500ms: %+v", d)
		}
		// Another key has its own bucket.
		if d := allowN(t, l, "other", lim, 1); !d.Allowed || d.Remaining != 2 {
			t.Fatalf("other key: %+v", d)
		}
		time.Sleep(1500 * time.Millisecond) // synctest's clock
		if d := allowN(t, l, "k", lim, 1); !d.Allowed || d.Remaining != 2 || d.ResetAfter != 500*time.Millisecond {
			t.Fatalf("refilled: %+v", d)
		}
	})
}

// A peek (n = 0) takes nothing, creates nothing, and says whether one unit
// would be allowed and when.
func TestLocalPeek(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLocal(nil, 0)
		lim := Limit{PerSecond: 1.0 / 3, Burst: 2} // 20 a minute, burst 2
		if d := allowN(t, l, "a", lim, 0); !d.Allowed || d.Remaining != 2 || d.ResetAfter != 0 {
			t.Fatalf("peek at a fresh bucket: %+v", d)
		}
		if l.Len() != 0 {
			t.Fatalf("a peek created %d entries", l.Len())
		}
		allowN(t, l, "a", lim, 1)
		if d := allowN(t, l, "a", lim, 0); !d.Allowed || d.Remaining != 1 {
			t.Fatalf("peek after one: %+v", d)
		}
		allowN(t, l, "a", lim, 1)
		for range 3 { // peeks never consume
			d := allowN(t, l, "a", lim, 0)
			if d.Allowed || d.Remaining != 0 || d.RetryAfter != 3*time.Second {
				t.Fatalf("peek at an empty bucket: %+v", d)
			}
		}
		time.Sleep(3 * time.Second) // synctest's clock
		if d := allowN(t, l, "a", lim, 0); !d.Allowed || d.Remaining != 1 || d.RetryAfter != 0 {
			t.Fatalf("peek after a refill: %+v", d)
		}
	})
}

// The cap holds whatever the number of keys: the least recently used bucket
// leaves first, and starts full if it comes back.
func TestLocalBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLocal(nil, 100)
		lim := Limit{PerSecond: 1, Burst: 1}
		for i := range 10_000 {
			if d := allowN(t, l, fmt.Sprint("addr", i), lim, 1); !d.Allowed {
				t.Fatalf("first call of key %d refused", i)
			}
			if n := l.Len(); n > 100 {
				t.Fatalf("%d entries after %d keys", n, i+1)
			}
		}
		if d := allowN(t, l, "addr0", lim, 1); !d.Allowed {
			t.Fatalf("an evicted bucket does not start full: %+v", d)
		}
		if d := allowN(t, l, "addr9999", lim, 1); d.Allowed {
			t.Fatalf("a recent bucket was forgotten: %+v", d)
		}
	})
}

// Idle (full) buckets leave as calls go by (idleGrace after they are full
// again), with no goroutine sweeping.
func TestLocalDropsIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLocal(nil, 0)
		lim := Limit{PerSecond: 10, Burst: 5}
		for i := range 50 {
			allowN(t, l, fmt.Sprint("key", i), lim, 1)
		}
		if l.Len() != 50 {
			t.Fatalf("%d entries", l.Len())
		}
		time.Sleep(time.Second + idleGrace) // synctest's clock: every bucket full again, and its grace over
		for range 30 {
			allowN(t, l, "busy", lim, 0)
		}
		if n := l.Len(); n != 0 {
			t.Fatalf("%d idle entries left after 30 calls", n)
		}
	})
}

// A changed Limit (a reloaded key file) applies to the bucket's state.
func TestLocalLimitChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLocal(nil, 0)
		for range 2 {
			allowN(t, l, "k", Limit{PerSecond: 1, Burst: 2}, 1)
		}
		if d := allowN(t, l, "k", Limit{PerSecond: 1, Burst: 2}, 1); d.Allowed {
			t.Fatalf("old limit: %+v", d)
		}
		if d := allowN(t, l, "k", Limit{PerSecond: 1, Burst: 5}, 1); !d.Allowed || d.Remaining != 2 {
			t.Fatalf("raised burst: %+v", d)
		}
		if d := allowN(t, l, "k", Limit{}, 1); !d.Allowed {
			t.Fatalf("an invalid limit limits: %+v", d)
		}
	})
}

// go-cache has no cap of its own: Local's holds for every kind of bucket,
// whatever partners send (a flood of failed authentications from new
// addresses, each one a new bucket that stays busy for a minute), and the
// buckets of one kind never push out those of another.
func TestLocalCapHoldsPerKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLocal(nil, 50)
		throttle := Limit{PerSecond: 20.0 / 60, Burst: 20}
		quota := Limit{PerSecond: 1, Burst: 1}
		for i := range 5 {
			if _, err := l.AllowN(context.Background(), Key{APIKey, fmt.Sprint("key_", i)}, quota, 1); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 20_000 {
			d, err := l.AllowN(context.Background(), Key{Address, fmt.Sprintf("2001:db8:%x::/64", i)}, throttle, 1)
			if err != nil || !d.Allowed {
				t.Fatalf("first failure of address %d: %+v, %v", i, d, err)
			}
			if n := l.Len(); n > 50+5 {
				t.Fatalf("%d buckets after %d addresses; cap 50 a kind", n, i+1)
			}
		}
		for i := range 5 {
			d, _ := l.AllowN(context.Background(), Key{APIKey, fmt.Sprint("key_", i)}, quota, 1)
			if d.Allowed {
				t.Fatalf("key_%d's spent quota was forgotten under the address flood", i)
			}
		}
	})
}

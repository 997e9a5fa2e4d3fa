package redishooks

import (
	"context"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

func (f form) lease(t *testing.T, brand, member string) *Lease {
	t.Helper()
	l, err := NewLease(LeaseConfig{Client: f.client(t), Brand: brand, Member: member})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func hold(t *testing.T, l *Lease, id string, ttl time.Duration) bool {
	t.Helper()
	ok, err := l.Hold(context.Background(), id, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// testLeaseOneHolder: one member holds an endpoint's lease; another
// neither takes, extends nor releases it; the holder extends it and, by
// releasing it, lets the other take it at once. Leases of two endpoints
// are apart. The TTLs are long: nothing here waits for one to run out.
func testLeaseOneHolder(t *testing.T, f form) {
	ctx := context.Background()
	brand := f.brand()
	one, two := f.lease(t, brand, "one"), f.lease(t, brand, "two")
	pttl := func() time.Duration { return f.raw.PTTL(ctx, one.key("whe_a")).Val() }
	if !hold(t, one, "whe_a", time.Minute) {
		t.Fatal("the first member did not take a free lease")
	}
	if hold(t, two, "whe_a", time.Hour) {
		t.Fatal("a second member took a held lease")
	}
	if d := pttl(); d > time.Minute || d <= 0 {
		t.Fatalf("another member's Hold changed the lease: %s left, want at most a minute", d)
	}
	if !hold(t, one, "whe_a", time.Hour) || pttl() <= time.Minute {
		t.Fatalf("the holder did not extend its lease: %s left", pttl())
	}
	if !hold(t, two, "whe_b", time.Minute) || !hold(t, one, "whe_a", time.Minute) {
		t.Fatal("leases of two endpoints are not apart")
	}
	if err := two.Release(ctx, "whe_a"); err != nil {
		t.Fatal(err)
	}
	if hold(t, two, "whe_a", time.Minute) || f.raw.Get(ctx, one.key("whe_a")).Val() != "one" {
		t.Fatal("a member released a lease it does not hold")
	}
	if err := one.Release(ctx, "whe_a"); err != nil {
		t.Fatal(err)
	}
	if !hold(t, two, "whe_a", time.Minute) {
		t.Fatal("a released lease was not free at once")
	}
	if hold(t, one, "whe_a", time.Minute) {
		t.Fatal("the member that released it took it back")
	}
	if l, err := NewLease(LeaseConfig{Client: f.client(t), Brand: brand}); err != nil || l.Member() == "" || l.Member() == "one" {
		t.Fatalf("a member with no name: %v, %q", err, l.Member())
	}
}

// testLeaseExpires: a lease its holder stops extending (a member killed)
// runs out, and another member takes it over; the first, alive again,
// does not take it back. Redis's clock decides: the lease is short and
// the other member looks until it is free, never a fixed sleep.
func testLeaseExpires(t *testing.T, f form) {
	brand := f.brand()
	one, two := f.lease(t, brand, "one"), f.lease(t, brand, "two")
	if !hold(t, one, "whe_a", 50*time.Millisecond) {
		t.Fatal("the first member did not take a free lease")
	}
	testkit.Eventually(t, "the second member takes the lease once it runs out", func() bool {
		return hold(t, two, "whe_a", time.Minute)
	})
	if hold(t, one, "whe_a", time.Minute) {
		t.Fatal("the first member took back a lease another holds")
	}
}

package retrybudget

import (
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

func allowed(b *Budget, tries int) int {
	n := 0
	for range tries {
		if b.TryRetry() {
			n++
		}
	}
	return n
}

func TestBudgetRatio(t *testing.T) {
	clk := testkit.NewClockAt(time.Unix(1_000_000, 0))
	b := New(Config{Ratio: 0.2, MinPerSecond: -1, Now: clk.Now})
	if n := allowed(b, 5); n != 0 {
		t.Fatalf("no requests yet: %d retries allowed, want 0", n)
	}
	for range 100 {
		b.Request()
	}
	if n := allowed(b, 50); n != 20 {
		t.Fatalf("100 requests: %d retries allowed, want 20", n)
	}
	// 50 more requests over the next seconds: 10 more retries.
	for range 50 {
		clk.Advance(100 * time.Millisecond)
		b.Request()
	}
	if n := allowed(b, 50); n != 10 {
		t.Fatalf("150 requests: %d retries allowed, want 10 more", n)
	}
	// Once the first burst leaves the 10 s window, its retries leave too:
	// 41 requests and 10 retries remain in the window: no room is left.
	clk.Advance(5100 * time.Millisecond)
	if n := allowed(b, 50); n != 0 {
		t.Fatalf("after the window slid: %d retries allowed, want 0", n)
	}
	// Everything expires after a quiet window.
	clk.Advance(11 * time.Second)
	if n := allowed(b, 5); n != 0 {
		t.Fatalf("quiet window: %d retries allowed, want 0", n)
	}
	for range 10 {
		b.Request()
	}
	if n := allowed(b, 5); n != 2 {
		t.Fatalf("10 fresh requests: %d retries allowed, want 2", n)
	}
}

func TestBudgetFloorPerSecond(t *testing.T) {
	clk := testkit.NewClockAt(time.Unix(2_000_000, 0))
	b := New(Config{Ratio: -1, MinPerSecond: 10, Now: clk.Now})
	if n := allowed(b, 30); n != 10 {
		t.Fatalf("floor burst: %d retries, want 10", n)
	}
	clk.Advance(500 * time.Millisecond)
	if n := allowed(b, 30); n != 5 {
		t.Fatalf("half a second later: %d retries, want 5", n)
	}
	clk.Advance(10 * time.Second)
	if n := allowed(b, 30); n != 10 {
		t.Fatalf("after a long pause: %d retries, want 10 (the burst, no more)", n)
	}
}

func TestBudgetDefaults(t *testing.T) {
	clk := testkit.NewClockAt(time.Unix(3_000_000, 0))
	b := New(Config{Now: clk.Now})
	for range 1000 {
		b.Request()
	}
	// 20% of 1000, then the floor's burst of 10.
	if n := allowed(b, 1000); n != 210 {
		t.Fatalf("defaults: %d retries for 1000 requests, want 210", n)
	}
}

// The zero Config allows the documented floor of retries a second.
func TestZeroConfig(t *testing.T) {
	clk := testkit.NewClockAt(time.Unix(1_000_000, 0))
	b := New(Config{Now: clk.Now})
	if n := allowed(b, 100); n != DefaultMinPerSecond {
		t.Fatalf("zero config, no requests: %d retries, want the floor %d", n, DefaultMinPerSecond)
	}
}

package observability_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability"
)

// A cause is allowed once per Every; the next allowed line carries how
// many were left out; causes are apart, and bounded in number.
func TestThrottle(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	th := &observability.Throttle{Now: func() time.Time { return now }}
	if n, ok := th.Allow("a"); !ok || n != 0 {
		t.Fatalf("first a: %d %v", n, ok)
	}
	for range 5 {
		if _, ok := th.Allow("a"); ok {
			t.Fatalf("a again within a minute allowed")
		}
	}
	if _, ok := th.Allow("b"); !ok {
		t.Fatalf("b held back by a")
	}
	now = now.Add(observability.LogEvery - time.Second)
	if _, ok := th.Allow("a"); ok {
		t.Fatalf("a allowed after 59 s")
	}
	now = now.Add(time.Second)
	if n, ok := th.Allow("a"); !ok || n != 6 {
		t.Fatalf("a after a minute: %d %v, want 6 left out", n, ok)
	}
	// Past the bound on causes, new ones share one.
	for i := range 200 {
		th.Allow(fmt.Sprint("cause ", i))
	}
	allowed := 0
	for i := range 200 {
		if _, ok := th.Allow(fmt.Sprint("new cause ", i)); ok {
			allowed++
		}
	}
	if allowed != 0 {
		t.Errorf("%d new causes allowed past the bound within the minute", allowed)
	}
}

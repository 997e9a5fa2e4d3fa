package gcrule

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

func TestGCPercentFor(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, maxGCPercent},
		{1 << 20, maxGCPercent},   // 1 MB live: 48 MB of headroom would be 4800%; capped
		{8 << 20, 600},            // the cached edge: a collection per 48 MB of garbage
		{12 << 20, 400},           //
		{48 << 20, 100},           // from here on Go's default
		{60 << 20, 100},           // a 50,000-hotel brand
		{1 << 30, 100},            //
		{(48 << 20) / 3 * 2, 150}, // in between
	} {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("gcPercentFor(%d MB) = %d, want %d", c.live>>20, got, c.want)
		}
	}
}

func TestTune(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })

	// GOGC set: the runtime read it; the edge leaves it alone, even Go's default.
	Tune(context.Background(), func(k string) (string, bool) { return "100", k == "GOGC" })
	runtime.GC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 set: GC percent %d, want 100 left alone", got)
	}

	// GOGC unset: the headroom rule at once, and again after a collection.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tuner := Tune(ctx, func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(-1); got < 100 || got > maxGCPercent {
		t.Fatalf("GOGC unset: GC percent %d, want within 100 and %d", got, maxGCPercent)
	}
	// -1 turned collection off; the tuner's cleanup, run after the next
	// collection (on the runtime's finalizer goroutine), sets the rule's
	// percentage again.
	testkit.Eventually(t, "the GC percent set again after a collection", func() bool {
		runtime.GC()
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		return p >= 100
	})

	// Once ctx ends the tuner stops re-arming: what the process sets stays.
	cancel()
	testkit.Eventually(t, "the tuner stopped", func() bool {
		runtime.GC()
		select {
		case <-tuner.stopped:
			return true
		default:
			return false
		}
	})
	debug.SetGCPercent(123)
	runtime.GC()
	runtime.GC()
	if got := debug.SetGCPercent(100); got != 123 {
		t.Errorf("after ctx ended: GC percent %d, want 123 left alone", got)
	}
}

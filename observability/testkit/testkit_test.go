package testkit

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestClock(t *testing.T) {
	c := NewClock()
	if !c.Now().Equal(Epoch) {
		t.Fatalf("new clock at %v, want %v", c.Now(), Epoch)
	}
	c.Advance(90 * time.Second)
	if got := c.Now().Sub(Epoch); got != 90*time.Second {
		t.Fatalf("advanced %v, want 90s", got)
	}
	c.Set(Epoch.Add(-time.Hour))
	if got := c.Now(); !got.Equal(Epoch.Add(-time.Hour)) {
		t.Fatalf("set to %v, want an hour before the epoch", got)
	}
}

// From reads its start and then moves as the clock it was made on does:
// in a synctest bubble, exactly as far as the bubble's clock.
func TestFrom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := From(Epoch)
		if got := clock(); !got.Equal(Epoch) {
			t.Fatalf("at once: %v, want %v", got, Epoch)
		}
		time.Sleep(90 * time.Second)
		if got := clock().Sub(Epoch); got != 90*time.Second {
			t.Fatalf("90 s later: %v past the start, want 90s", got)
		}
		if later := From(Epoch.Add(time.Hour))(); !later.Equal(Epoch.Add(time.Hour)) {
			t.Fatalf("a clock made later reads %v, want its own start %v", later, Epoch.Add(time.Hour))
		}
	})
	// Off a bubble it moves with the wall clock, never backwards.
	clock := From(Epoch)
	a := clock()
	b := clock()
	if a.Before(Epoch) || b.Before(a) || b.Sub(Epoch) > time.Minute {
		t.Fatalf("wall-clock readings %v then %v, want from %v on, forward", a, b, Epoch)
	}
}

func TestLogBufferConcurrent(t *testing.T) {
	log, buf := NewLogger()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				log.Debug("line")
				_ = buf.String()
			}
		})
	}
	wg.Wait()
	if n := buf.Count("msg=line"); n != 800 {
		t.Fatalf("%d lines, want 800", n)
	}
	if !strings.Contains(buf.String(), "level=DEBUG") {
		t.Fatalf("debug level not written: %q", buf.String()[:80])
	}
}

func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, "the third look", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("cond called %d times, want 3", n)
	}
}

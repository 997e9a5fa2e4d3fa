package cache

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Loads run on kept goroutines: after a burst, up to maxIdleWorkers wait,
// the next load takes one of them instead of a new goroutine, and Close
// ends them all (synctest.Test fails on a goroutine left in its bubble).
func TestWorkersKeptReusedAndEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(&fakeCatalog{}, Config{TTL: time.Second})
		release := make(chan struct{})
		var wg sync.WaitGroup
		for range maxIdleWorkers + 10 {
			wg.Add(1)
			c.spawn(func() { defer wg.Done(); <-release })
		}
		synctest.Wait()
		if got := c.idle.Load(); got != 0 {
			t.Fatalf("while %d loads run: %d idle workers, want 0", maxIdleWorkers+10, got)
		}
		close(release)
		wg.Wait()
		synctest.Wait()
		if got := c.idle.Load(); got != maxIdleWorkers {
			t.Fatalf("after the burst: %d idle workers, want the cap %d (the rest ended)", got, maxIdleWorkers)
		}

		hold := make(chan struct{})
		c.spawn(func() { <-hold })
		synctest.Wait()
		if got := c.idle.Load(); got != maxIdleWorkers-1 {
			t.Fatalf("one more load: %d idle workers, want %d (a kept worker took it)", got, maxIdleWorkers-1)
		}
		close(hold)
		synctest.Wait()

		c.Close()
		if got := c.idle.Load(); got != 0 {
			t.Fatalf("after Close: %d idle workers, want 0", got)
		}
		ran := make(chan struct{})
		c.spawn(func() { close(ran) }) // closed: still runs (run refuses the load itself)
		<-ran
	})
}

package cache

// maxIdleWorkers bounds the goroutines kept waiting for a load: as many
// as the loads that ran at once recently, up to this many.
const maxIdleWorkers = 128

// spawn runs f on a goroutine of the Cache: an idle one kept from an
// earlier load when there is one, else a new one, which then waits for
// the next load until the Cache is closed (or maxIdleWorkers already
// wait).
//
// Why not a new goroutine per load, as singleflight.DoChan starts: a
// load's call stack (the breaker, go-retryablehttp, otelhttp, net/http's
// client) is deep, and each new goroutine grew its small first stack by
// copying it two or three times: about 7% of a cache miss's CPU in
// bench/run's profile. A kept goroutine's stack is grown already.
//
// The kept goroutines are counted in wg like every goroutine of the
// Cache: Close ends the idle ones and waits for the busy ones. f must not
// block past Close (a load's context ends with it).
func (c *Cache) spawn(f func()) {
	select {
	case c.work <- f: // an idle worker was waiting
		return
	default:
	}
	if !c.track() { // closed: f fails fast (run refuses), on a goroutine of its own
		go f()
		return
	}
	go func(f func()) { // f as an argument: a captured f would be moved to the heap on every spawn
		defer c.wg.Done()
		for {
			f()
			if c.idle.Add(1) > maxIdleWorkers {
				c.idle.Add(-1)
				return
			}
			select {
			case f = <-c.work:
				c.idle.Add(-1)
			case <-c.base.Done():
				c.idle.Add(-1)
				return
			}
		}
	}(f)
}

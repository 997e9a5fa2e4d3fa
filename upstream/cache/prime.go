package cache

import (
	"context"
	"time"
)

// primeWaitMax bounds the wait between two walks of Prime after failures:
// a PMS that refuses the edge is asked again (and its error line repeated,
// RefusalLogEvery) at least this often.
const primeWaitMax = 30 * time.Second

// Prime starts the first walk of the snapshot now, in the background, so
// that the first partner does not wait for it (docs/contract.md section
// 22), and walks again after each failure (the refresh backoff: from
// RefreshBackoff doubling to TTL, at most primeWaitMax, at least the PMS's
// Retry-After) until a snapshot is held or the Cache is closed. Callers
// meanwhile join the walk under way. With TTL 0 it does nothing. Call it
// once.
func (c *Cache) Prime() {
	if c.disabled || !c.track() {
		return
	}
	go func() {
		defer c.wg.Done()
		wait := c.cfg.RefreshBackoff
		for c.cur.Load() == nil {
			ctx, end := c.startWalk(c.base, WalkFirstLoad)
			ctx = context.WithValue(ctx, walkKindKey{}, WalkFirstLoad)
			_, err, _ := c.group.Do(snapKey, func() (any, error) {
				return c.run(ctx, c.loadAfter(nil, c.cfg.TTL), walkStarted, c.cfg.WalkTimeout)
			})
			end(err)
			if err == nil {
				return
			}
			d := max(wait, c.backoffLeft())
			wait = min(wait*2, max(min(c.cfg.TTL, primeWaitMax), c.cfg.RefreshBackoff))
			t := time.NewTimer(min(d, primeWaitMax))
			select {
			case <-c.base.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
}

// backoffLeft is how long refreshes still back off after failed loads.
func (c *Cache) backoffLeft() time.Duration {
	c.bmu.Lock()
	defer c.bmu.Unlock()
	return c.backoffTo.Sub(c.cfg.Now())
}

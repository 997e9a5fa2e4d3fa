package redisconn

import (
	"cmp"
	"context"
	"time"
)

// DefaultHealthEvery is how often Watch probes Redis.
const DefaultHealthEvery = time.Second

// Watch probes Redis every every (zero or negative: DefaultHealthEvery)
// until ctx is done with one small write through the guard (Guard.Probe),
// so that the breaker, the fence and /fleet follow Redis even while no
// request arrives (docs/contract.md section 17: within 5 s); the first
// probe that succeeds after Redis was unreachable at start logs that this
// member joined the fleet. The probes make no spans (one trace a second would bury the others), only metrics.
func (c *Client) Watch(ctx context.Context, every time.Duration) {
	watch(ctx, cmp.Or(max(every, 0), DefaultHealthEvery), func(ctx context.Context) {
		if c.guard.Probe(context.WithValue(ctx, noSpanKey{}, true), c.probeWrite) == nil {
			c.joinedNow(ctx, "") // a Redis unreachable at start answers: say so once
		}
	})
}

// watch calls probe every every until ctx is done; a probe that outlasts
// every delays the next one (the ticker drops the missed ticks).
func watch(ctx context.Context, every time.Duration, probe func(context.Context)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			probe(ctx)
		}
	}
}

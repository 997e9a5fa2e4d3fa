package redisconn

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// writeRefusals are the error replies with which Redis refuses a write
// while it may still answer reads: out of memory under noeviction, a
// read-only replica, an ACL without the permission, lost credentials, a
// failed save, missing replicas (the reply's first word, errorType). Any
// of them means the shared state cannot be kept (docs/contract.md section
// 15): Redis counts as unavailable.
var writeRefusals = []string{"OOM", "READONLY", "NOPERM", "NOAUTH", "WRONGPASS", "MISCONF", "NOREPLICAS"}

// fence keeps the guard shut while Redis refuses writes, which the breaker
// alone would not see (reads keep succeeding between the refused writes).
// A write refusal raises it; only a probe write let through every
// OpenTimeout takes it down. Logged once each way.
type fence struct {
	every   time.Duration
	probe   func(ctx context.Context) error // a small write; nil: none (the fence falls after every)
	log     *slog.Logger
	metrics *Metrics // the breaker gauge follows the fence

	mu      sync.Mutex
	up      bool
	next    time.Time // when the next probe may run
	probing bool
}

// raise puts the fence up after a refusal reply (no-op when up).
func (f *fence) raise(reason string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.up {
		return
	}
	f.up, f.next = true, time.Now().Add(f.every)
	f.log.Warn("redis refuses writes: shared limits and snapshots fall back to in-process until it accepts them",
		"reply", reason, "error", err.Error())
	f.metrics.BreakerState(context.Background(), upstream.BreakerOpen)
}

// isUp reports whether the fence stands.
func (f *fence) isUp() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.up
}

// pass returns nil when a call may go to Redis: the fence is down, or it
// is this call's turn to probe and the probe write succeeded (the fence
// then falls). Otherwise it returns why not, wrapping ErrUnavailable.
// Only the background probe (mayProbe: Guard.Probe) writes the probe: a
// partner's request never waits on it.
func (f *fence) pass(ctx context.Context, timeout time.Duration, mayProbe bool) error {
	f.mu.Lock()
	if !f.up {
		f.mu.Unlock()
		return nil
	}
	if f.probing || time.Now().Before(f.next) || !mayProbe && f.probe != nil {
		f.mu.Unlock()
		return fmt.Errorf("%w: redis refuses writes", ErrUnavailable)
	}
	f.probing, f.next = true, time.Now().Add(f.every)
	f.mu.Unlock()

	var err error
	if f.probe != nil {
		pctx, cancel := context.WithTimeout(ctx, timeout)
		err = f.probe(pctx)
		cancel()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probing = false
	if err != nil {
		return fmt.Errorf("%w: redis still refuses writes: %w", ErrUnavailable, err)
	}
	f.up = false
	f.log.Info("redis accepts writes again: shared limits and snapshots resume")
	f.metrics.BreakerState(context.Background(), upstream.BreakerClosed)
	return nil
}

// probeKey is the key the fence's probe writes (briefly): under the
// edge's own prefix, so an ACL limited to the edge's keys allows it.
const probeKey = "pe:probe"

package webhooks

import (
	"context"
	"time"
)

// Lease lets one member of a fleet deliver an endpoint at a time: a
// member delivers an endpoint's events only while it holds the endpoint's
// lease, and a member that stops (killed included) is replaced once its
// lease runs out. A single edge needs none.
type Lease interface {
	// Hold takes the lease of endpoint id for this member, or extends the
	// one it holds, for ttl from now; false when another member holds it.
	Hold(ctx context.Context, id string, ttl time.Duration) (bool, error)
	// Release gives up the lease of endpoint id if this member holds it.
	Release(ctx context.Context, id string) error
}

// DefaultLeaseTTL is how long a lease lasts unless extended: three
// attempts' time. The holder extends it before each attempt once a third
// of it has passed, and never waits longer than a third of it between two
// extensions, so it is never lost while its member lives; another member
// looks again every third of it, and takes over at most a lease and a
// third after the holder stopped.
const DefaultLeaseTTL = 3 * AttemptTimeout

// holding is one endpoint's goroutine's lease: when it was last extended.
type holding struct {
	id string
	at time.Time // zero: not held
}

// hold reports whether this member may deliver h's endpoint now, taking
// or extending the lease when a third of it has passed; always true
// without a Lease.
func (d *Deliverer) hold(ctx context.Context, h *holding) bool {
	if d.cfg.Lease == nil {
		return true
	}
	now := d.cfg.Now()
	if !h.at.IsZero() && now.Sub(h.at) < d.cfg.LeaseTTL/3 {
		return true
	}
	ok, err := d.cfg.Lease.Hold(ctx, h.id, d.cfg.LeaseTTL)
	if err != nil {
		d.warn(ctx, "webhooks: cannot take an endpoint's lease", h.id, err)
	}
	if err != nil || !ok {
		h.at = time.Time{}
		return false
	}
	h.at = now
	return true
}

// release gives up h's lease, if held, even while ctx ends.
func (d *Deliverer) release(ctx context.Context, h *holding) {
	if d.cfg.Lease == nil || h.at.IsZero() {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AttemptTimeout)
	defer cancel()
	if err := d.cfg.Lease.Release(rctx, h.id); err != nil {
		d.cfg.Log.Warn("webhooks: cannot release an endpoint's lease", "endpoint", h.id, "error", err)
	}
	h.at = time.Time{}
}

// leaseWait caps a wait while a Lease is in use at a third of its TTL, so
// that the holder extends it in time and others look again as often.
func (d *Deliverer) leaseWait(w time.Duration) time.Duration {
	if d.cfg.Lease == nil {
		return w
	}
	return min(w, d.cfg.LeaseTTL/3)
}

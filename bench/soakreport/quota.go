package main

import "fmt"

// fleetSize is the soak's number of edges: while Redis is away each edge
// limits a key by itself, so the fleet admits up to fleetSize times the
// quota (docs/resilience.md, "Quotas while Redis fails over").
const fleetSize = 3

// refill is the lease limiter's refill interval (redislimit.Refill): in
// an overload each edge holds at most one refill's grant when a window
// starts (docs/scaling.md, "The accuracy bound").
const refill = 0.1 // seconds

// failover is the fault during which the fleet's Redis is away.
const failover = "redis-failover"

// limitedBound is the most the limited key may be admitted in fault window
// s by what the docs promise. The fleet shares one quota: at most burst +
// rate x seconds, plus what the edges hold of their leases when the window
// starts, one refill's grant each under this overload (docs/scaling.md,
// "The accuracy bound"). While Redis is away each edge limits by itself:
// at most fleetSize x (burst + rate x seconds) (docs/resilience.md,
// "Quotas while Redis fails over").
func limitedBound(c config, s *segment) float64 {
	secs := s.end.Sub(s.start).Seconds()
	if s.name == failover {
		return fleetSize * (c.limitBurst + c.limitRate*secs)
	}
	return c.limitBurst + c.limitRate*secs + fleetSize*c.limitRate*refill
}

// quotaRatio is the limited key's admission in s over its quota there
// (rate x seconds); 0 for a window of no length.
func quotaRatio(c config, s *segment) float64 {
	q := c.limitRate * s.end.Sub(s.start).Seconds()
	if q <= 0 {
		return 0
	}
	return float64(s.limited200) / q
}

// limitedPromise says in words what limitedBound allows in s.
func limitedPromise(s *segment) string {
	if s.name == failover {
		return fmt.Sprintf("Redis away: each of the %d edges limits by itself, up to %d x (burst + rate x s)", fleetSize, fleetSize)
	}
	return "one quota shared by the fleet: burst + rate x s, plus a refill's lease per edge"
}

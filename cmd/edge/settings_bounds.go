package main

import (
	"fmt"
	"math"

	"github.com/partner-edge/partner-edge/edge/ratelimit"
)

// minFleetSecret is the shortest EDGE_FLEET_SECRET taken (docs/contract.md section 15):
// an HMAC-SHA256 key of at least the hash's own size.
const minFleetSecret = 32

// maxRate is the fastest rate a limiter can represent: the Redis limiter
// counts in emission intervals of at least a microsecond.
const maxRate = 1e6

// secret reads a setting that is never echoed: errors name the variable
// only.
func (p *parser) secret(env string) []byte {
	return []byte(p.get[env].value)
}

// checkBounds refuses what would not be enforced as configured
// (docs/contract.md section 15): a default quota the limiter cannot represent (it would
// mean no limit at all), and a fleet in Redis without a secret to
// authenticate what it shares.
func (p *parser) checkBounds(s *settings) {
	if s.RatePerSecond > 0 {
		burst := s.RateBurst
		if burst <= 0 {
			burst = max(1, int(math.Ceil(min(s.RatePerSecond, maxRate))))
		}
		if l := (ratelimit.Limit{PerSecond: s.RatePerSecond, Burst: burst}); !l.Valid() || s.RatePerSecond > maxRate {
			st := p.get["EDGE_RATE_LIMIT"]
			p.bad(st, fmt.Sprintf("a limiter cannot represent this rate with burst %d: want 0 (off) or more than %g and at most %g requests a second",
				burst, ratelimit.MinRate(burst), float64(maxRate)))
		}
	}
	if s.Redis.Configured() && len(s.FleetSecret) < minFleetSecret {
		src := p.get["EDGE_FLEET_SECRET"].source
		if len(s.FleetSecret) == 0 {
			p.fail(fmt.Errorf("%s is required when %s is set: a random secret of at least %d bytes shared by every instance (docs/contract.md section 15)", src, s.Redis.Variable(), minFleetSecret))
		} else {
			p.fail(fmt.Errorf("%s is too short (%d bytes): want at least %d bytes", src, len(s.FleetSecret), minFleetSecret))
		}
	}
}

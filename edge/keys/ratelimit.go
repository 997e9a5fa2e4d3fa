package keys

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/partner-edge/partner-edge/edge/ratelimit"
)

// RateLimit is a key's own quota (the key file's "rateLimit"): a token
// bucket refilled at PerSecond tokens a second and holding at most Burst.
// It is the edge's one Limit type, named here for the key file.
type RateLimit = ratelimit.Limit

// Bounds of a key's rateLimit: far beyond any real quota, small enough that
// the bucket's arithmetic (nanosecond intervals) stays exact.
const (
	maxPerSecond = 1e6
	maxBurst     = 1e6
)

var rateLimitFields = map[string]bool{"perSecond": true, "burst": true}

// parseRateLimit reads rateLimit: absent gives nil (the deployment's
// default applies). Both fields are required and positive; unknown fields
// are errors, like everywhere in the key file.
func parseRateLimit(raw json.RawMessage) (*RateLimit, error) {
	if raw == nil {
		return nil, nil
	}
	if string(raw) == "null" {
		return nil, errors.New(`must be an object {"perSecond": n, "burst": n}; omit the field for the default quota`)
	}
	if err := checkFields(raw, rateLimitFields, "object"); err != nil {
		return nil, err
	}
	var w struct {
		PerSecond *float64 `json:"perSecond"`
		Burst     *float64 `json:"burst"`
	}
	if err := decodeStrict(raw, &w); err != nil {
		return nil, err
	}
	switch {
	case w.PerSecond == nil || w.Burst == nil:
		return nil, errors.New("perSecond and burst are both required")
	case !(*w.PerSecond > 0) || *w.PerSecond > maxPerSecond:
		return nil, errors.New("perSecond must be a positive number of requests a second, at most 1000000")
	case *w.Burst < 1 || *w.Burst > maxBurst || *w.Burst != math.Trunc(*w.Burst):
		return nil, errors.New("burst must be a whole number from 1 to 1000000")
	case !(RateLimit{PerSecond: *w.PerSecond, Burst: int(*w.Burst)}).Valid():
		// A bucket that does not refill within 1e18 ns: the limiter would take
		// it for "no limit" (docs/contract.md section 15).
		return nil, fmt.Errorf("perSecond %g is too small for burst %g: a limiter cannot represent it; want more than %g",
			*w.PerSecond, *w.Burst, ratelimit.MinRate(int(*w.Burst)))
	}
	return &RateLimit{PerSecond: *w.PerSecond, Burst: int(*w.Burst)}, nil
}

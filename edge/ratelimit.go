package edge

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/partner-edge/partner-edge/problem"
	"golang.org/x/time/rate"
)

// RateLimit is a per-key token bucket. The zero value disables limiting,
// which is v1's default (partner-api-v1.md section 8 announces enforcement
// for later).
type RateLimit struct {
	// PerSecond is each key's sustained rate. Zero or less disables limiting.
	PerSecond float64
	// Burst is how many requests a key may make at once. Zero means
	// max(1, ceil(PerSecond)).
	Burst int
}

// limiters holds one bucket per key id. Key ids come from the operator's
// key file, never from what a partner sends, so the map is bounded.
type limiters struct {
	cfg RateLimit
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*rate.Limiter
}

func newLimiters(cfg RateLimit, now func() time.Time) *limiters {
	if cfg.PerSecond <= 0 {
		return nil
	}
	if cfg.Burst <= 0 {
		cfg.Burst = max(1, int(math.Ceil(cfg.PerSecond)))
	}
	return &limiters{cfg: cfg, now: now, m: make(map[string]*rate.Limiter)}
}

func (l *limiters) get(keyID string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.m[keyID]
	if !ok {
		lim = rate.NewLimiter(rate.Limit(l.cfg.PerSecond), l.cfg.Burst)
		l.m[keyID] = lim
	}
	return lim
}

// rateLimit answers 429 RATE_LIMITED, with Retry-After and the RateLimit
// headers, to a key over its quota. It runs right after authentication:
// every authenticated request counts.
func (s *server) rateLimit(next http.Handler) http.Handler {
	if s.limits == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lim := s.limits.get(Key(r.Context()).ID)
		now := s.limits.now()
		if lim.AllowN(now, 1) {
			next.ServeHTTP(w, r)
			return
		}
		// Seconds until one request is allowed again.
		wait := time.Duration(float64(time.Second) * (1 - lim.TokensAt(now)) / s.limits.cfg.PerSecond)
		secs := problem.RetryAfterSeconds(wait)
		s.fail(w, r, &problem.Error{
			Code:       problem.RateLimited,
			Detail:     "This API key has used its request quota. Retry after the number of seconds in Retry-After.",
			RetryAfter: wait,
			Header: http.Header{
				"Ratelimit-Limit":     {strconv.Itoa(s.limits.cfg.Burst)},
				"Ratelimit-Remaining": {"0"},
				"Ratelimit-Reset":     {strconv.Itoa(secs)},
			},
		})
	})
}

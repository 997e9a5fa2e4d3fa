package pms

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/sony/gobreaker/v2"
)

// Defaults of BreakerConfig.
const (
	DefaultBreakerConsecutiveFailures = 5
	DefaultBreakerFailureRatio        = 0.5
	DefaultBreakerMinRequests         = 10
	DefaultBreakerWindow              = 30 * time.Second
	DefaultBreakerBucketPeriod        = time.Second
	DefaultBreakerOpenTimeout         = 10 * time.Second
)

// BreakerConfig configures the circuit breaker around each HTTP request to
// the PMS with its retries: one get, or one page of a list walk (not each
// attempt: the retries of one request are one outcome; not a whole walk,
// which may take minutes: docs/resilience.md, "How the breaker counts").
// A request counts as a failure when it fails after its retries; a PMS 404
// to a get counts as a success (the PMS answered), and the caller's own
// cancellation is not counted at all. Below, "call" is such a request.
type BreakerConfig struct {
	// ConsecutiveFailures opens the breaker after that many failed calls
	// in a row. Zero means DefaultBreakerConsecutiveFailures (5).
	ConsecutiveFailures uint32
	// FailureRatio opens the breaker when at least that share of the
	// calls in the rolling window failed, once the window holds at least
	// MinRequests calls. Zero means DefaultBreakerFailureRatio (0.5);
	// above 1 disables the ratio rule.
	FailureRatio float64
	// MinRequests is the number of calls the window must hold before
	// FailureRatio applies. Zero means DefaultBreakerMinRequests (10).
	MinRequests uint32
	// Window is the rolling window of the ratio rule, made of buckets of
	// BucketPeriod (gobreaker's Interval and BucketPeriod). Zero means
	// DefaultBreakerWindow (30 s).
	Window time.Duration
	// BucketPeriod is the granularity of the rolling window. Zero means
	// DefaultBreakerBucketPeriod (1 s).
	BucketPeriod time.Duration
	// OpenTimeout is how long the breaker stays open before letting
	// probes through (half-open). Zero means DefaultBreakerOpenTimeout
	// (10 s).
	OpenTimeout time.Duration
	// OnStateChange, when set, is called on every state change with the
	// states' names ("closed", "half-open", "open"), for metrics. It runs
	// under the breaker's lock: it must be quick and must not call the
	// client.
	OnStateChange func(from, to string)
}

func (bc BreakerConfig) withDefaults() (BreakerConfig, error) {
	bc.ConsecutiveFailures = cmp.Or(bc.ConsecutiveFailures, DefaultBreakerConsecutiveFailures)
	bc.FailureRatio = cmp.Or(bc.FailureRatio, DefaultBreakerFailureRatio)
	bc.MinRequests = cmp.Or(bc.MinRequests, DefaultBreakerMinRequests)
	bc.Window = cmp.Or(bc.Window, DefaultBreakerWindow)
	bc.BucketPeriod = cmp.Or(bc.BucketPeriod, DefaultBreakerBucketPeriod)
	bc.OpenTimeout = cmp.Or(bc.OpenTimeout, DefaultBreakerOpenTimeout)
	if bc.FailureRatio < 0 || bc.Window < 0 || bc.BucketPeriod < 0 || bc.OpenTimeout < 0 {
		return bc, fmt.Errorf("upstream: Breaker settings must not be negative")
	}
	return bc, nil
}

// breaker wraps gobreaker and remembers when it last opened, to tell
// callers how long until it probes again.
type breaker struct {
	cb      *gobreaker.CircuitBreaker[struct{}]
	timeout time.Duration
	now     func() time.Time

	openedAt atomic.Int64 // unix nanoseconds of now when it last opened; 0: never
	// changes paces the state-change lines by transition: a PMS that
	// stays down makes the breaker open, probe and open again every
	// OpenTimeout, for as long as the outage lasts.
	changes observability.Throttle
}

// newBreaker returns the breaker of one client. metrics, when not nil,
// reads its state when metrics are collected: gobreaker moves an open
// breaker to half-open when asked for its state after the timeout, so the
// gauge is true at the scrape even when no request came (an alert on it
// resolves without traffic).
func newBreaker(name string, bc BreakerConfig, log *slog.Logger, metrics *upstream.PMSMetrics, now func() time.Time) *breaker {
	b := &breaker{timeout: bc.OpenTimeout, now: now}
	b.changes.Now = now
	b.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:         name,
		MaxRequests:  1, // one probe at a time in half-open: its success closes the breaker, its failure opens it
		Interval:     bc.Window,
		BucketPeriod: bc.BucketPeriod,
		Timeout:      bc.OpenTimeout,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			if c.ConsecutiveFailures >= bc.ConsecutiveFailures {
				return true
			}
			done := c.TotalSuccesses + c.TotalFailures
			return done >= bc.MinRequests && float64(c.TotalFailures) >= bc.FailureRatio*float64(done)
		},
		// Called under gobreaker's lock, with its own clock (time.Now).
		OnStateChange: func(name string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				b.openedAt.Store(b.now().UnixNano())
			}
			// At most one line a minute per transition, the next counting
			// those left out (docs/operations.md, "What to watch").
			if suppressed, ok := b.changes.Allow(from.String() + ">" + to.String()); ok {
				attrs := []any{"breaker", name, "from", from.String(), "to", to.String()}
				if suppressed > 0 {
					attrs = append(attrs, "suppressed", suppressed, "repeats_every", observability.LogEvery.String())
				}
				log.Info("pms circuit breaker state changed", attrs...)
			}
			if bc.OnStateChange != nil {
				bc.OnStateChange(from.String(), to.String())
			}
		},
		// A 404 is the PMS answering correctly.
		IsSuccessful: func(err error) bool { return err == nil || errors.Is(err, upstream.ErrNotFound) },
		// The caller's own cancellation says nothing about the PMS.
		// Nor does load shedding: the PMS asked for a pause, which the
		// client keeps on its own (Client.hold).
		IsExcluded: func(err error) bool {
			if err == nil { // the common case, before the targets below escape
				return false
			}
			var (
				cg *callerGoneError
				se *sheddingError
			)
			return errors.As(err, &cg) || errors.As(err, &se)
		},
	})
	if metrics != nil {
		metrics.ObserveBreaker(func() upstream.BreakerState { return upstream.ParseBreakerState(b.State()) })
	}
	return b
}

// execute runs call through the breaker. While open it returns a
// *breakerOpenError (gobreaker.ErrOpenState, or ErrTooManyRequests in
// half-open) at once.
func (b *breaker) execute(call func() error) error {
	_, err := b.cb.Execute(func() (struct{}, error) { return struct{}{}, call() })
	if err != nil && isBreakerOpen(err) {
		return &breakerOpenError{err: err, wait: b.RetryAfter()}
	}
	return err
}

// isBreakerOpen reports whether err is the breaker refusing a call.
func isBreakerOpen(err error) bool {
	return errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
}

// retryAfter is the time until the breaker lets a probe through, at least
// one second.
func (b *breaker) RetryAfter() time.Duration {
	opened := b.openedAt.Load()
	if opened == 0 {
		return time.Second
	}
	return max(time.Duration(opened-b.now().UnixNano())+b.timeout, time.Second)
}

// State is the breaker's current state: "closed", "half-open" or "open".
func (b *breaker) State() string { return b.cb.State().String() }

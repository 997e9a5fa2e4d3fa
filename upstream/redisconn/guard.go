package redisconn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// Defaults of GuardConfig.
const (
	DefaultCallTimeout         = 100 * time.Millisecond
	DefaultBulkTimeout         = 10 * time.Second
	DefaultConsecutiveFailures = 3
	DefaultOpenTimeout         = 2 * time.Second
)

// ErrUnavailable wraps every error that means "Redis is slow, down or
// refused by the breaker": the caller should use its in-process behaviour.
var ErrUnavailable = errors.New("fleet: redis unavailable")

// GuardConfig configures the deadline and circuit breaker around each
// logical Redis call (one method of the limiter or the store).
type GuardConfig struct {
	CallTimeout time.Duration // bounds each call; zero: DefaultCallTimeout
	// BulkTimeout bounds each bulk call (DoBulk: a walk's worth of data,
	// off any request's path); zero: DefaultBulkTimeout, and never less
	// than CallTimeout.
	BulkTimeout         time.Duration
	ConsecutiveFailures uint32 // failed calls in a row that open the breaker; zero: DefaultConsecutiveFailures
	// OpenTimeout is how long the breaker refuses calls before letting one
	// probe through (half-open); zero: DefaultOpenTimeout.
	OpenTimeout time.Duration
}

func (c GuardConfig) withDefaults() (GuardConfig, error) {
	if c.CallTimeout < 0 || c.OpenTimeout < 0 || c.BulkTimeout < 0 {
		return c, fmt.Errorf("fleet: guard durations must not be negative")
	}
	c.CallTimeout = cmp.Or(c.CallTimeout, DefaultCallTimeout)
	c.BulkTimeout = max(cmp.Or(c.BulkTimeout, DefaultBulkTimeout), c.CallTimeout)
	c.ConsecutiveFailures = cmp.Or(c.ConsecutiveFailures, DefaultConsecutiveFailures)
	c.OpenTimeout = cmp.Or(c.OpenTimeout, DefaultOpenTimeout)
	return c, nil
}

// Guard runs calls with a deadline through a circuit breaker. Safe for
// concurrent use. The breaker's clock is time.Now (a synctest bubble's
// fake clock in tests).
type Guard struct {
	cb      *gobreaker.CircuitBreaker[struct{}]
	timeout time.Duration
	bulk    time.Duration // DoBulk's
	metrics *Metrics
	fence   *fence // up while Redis refuses writes (fence.go)
}

// NewGuard returns a guard; log (nil: discard) gets one line per breaker
// transition, metrics (nil: none) the errors and the breaker state.
func NewGuard(cfg GuardConfig, log *slog.Logger, metrics *Metrics) (*Guard, error) {
	cfg, err := cfg.withDefaults()
	if err == nil && metrics == nil {
		metrics, err = NewMetrics(nil, "", 0) // no-op instruments
	}
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := &Guard{timeout: cfg.CallTimeout, bulk: cfg.BulkTimeout, metrics: metrics, fence: &fence{every: cfg.OpenTimeout, log: log, metrics: metrics}}
	// A Redis that stays down makes the breaker open, probe and open
	// again every OpenTimeout: each transition is a line at most once a
	// minute, the next counting those left out (docs/operations.md).
	changes := &observability.Throttle{}
	g.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        "redis",
		MaxRequests: 1,
		Timeout:     cfg.OpenTimeout,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= cfg.ConsecutiveFailures },
		// Runs under gobreaker's lock: quick, and never calls the guard.
		OnStateChange: func(_ string, from, to gobreaker.State) {
			level, msg := slog.LevelInfo, "redis circuit breaker state changed"
			switch to {
			case gobreaker.StateOpen:
				level, msg = slog.LevelWarn, "redis circuit breaker opened: shared limits and snapshots fall back to in-process"
			case gobreaker.StateClosed:
				msg = "redis answers again: shared limits and snapshots resume"
			}
			if suppressed, ok := changes.Allow(from.String() + ">" + to.String()); ok {
				attrs := []any{"from", from.String(), "to", to.String()}
				if suppressed > 0 {
					attrs = append(attrs, "suppressed", suppressed, "repeats_every", observability.LogEvery.String())
				}
				log.Log(context.Background(), level, msg, attrs...)
			}
			metrics.BreakerState(context.Background(), upstream.ParseBreakerState(to.String()))
		},
		IsSuccessful: func(err error) bool { _, failed := classify(err); return !failed },
		IsExcluded:   func(err error) bool { return errors.Is(err, errCallerGone) },
	})
	return g, nil
}

// State is the breaker's state now (for the admin listener); while Redis
// refuses writes (the fence is up) it is BreakerOpen whatever the breaker.
func (g *Guard) State() upstream.BreakerState {
	if g.fence.isUp() {
		return upstream.BreakerOpen
	}
	return upstream.ParseBreakerState(g.cb.State().String())
}

// setProbe sets the write the fence probes with (Client: a short SET).
func (g *Guard) setProbe(probe func(ctx context.Context) error) { g.fence.probe = probe }

// Do runs fn with a context bounded by the call timeout, through the
// breaker, for a caller on a request's path. While the breaker is not
// closed (its half-open trial is Probe's) or the fence is up (fence.go), it
// returns an error wrapping ErrUnavailable at once, without calling fn: a
// request never waits on the trial of a Redis that may still be slow
// (docs/contract.md section 21). A timeout, a connection failure or an
// "unavailable" reply (classify) wraps ErrUnavailable too; redis.Nil and
// other replies are returned as is. When ctx itself ends, Do returns its
// error and the breaker does not count the call.
func (g *Guard) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return g.do(ctx, fn, false, g.timeout)
}

// DoBulk is Do for a call that moves a walk's worth of data (a fleet's
// snapshot, the events feed's append and base): off any request's path,
// it is bounded by the bulk timeout instead of the call timeout, which a
// brand's 50,000 properties outlast on a busy machine. It goes through
// the same breaker: a bulk call that fails counts like any other.
func (g *Guard) DoBulk(ctx context.Context, fn func(ctx context.Context) error) error {
	return g.do(ctx, fn, false, g.bulk)
}

// Probe is Do for the background health probe (Client.Watch): it alone
// runs the breaker's half-open trial and the fence's probe write, so that
// Redis is found back without a partner's request paying for the finding.
func (g *Guard) Probe(ctx context.Context, fn func(ctx context.Context) error) error {
	return g.do(ctx, fn, true, g.timeout)
}

func (g *Guard) do(ctx context.Context, fn func(ctx context.Context) error, probe bool, timeout time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := g.fence.pass(ctx, g.timeout, probe); err != nil {
		g.count(ErrRejected)
		return &shutOff{err}
	}
	if st := g.cb.State(); !probe && st != gobreaker.StateClosed {
		g.count(ErrRejected)
		return &shutOff{fmt.Errorf("%w: circuit breaker %s", ErrUnavailable, st)}
	}
	_, err := g.cb.Execute(func() (struct{}, error) {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		err := fn(cctx)
		if err != nil && ctx.Err() != nil {
			return struct{}{}, errCallerGone
		}
		return struct{}{}, err
	})
	if err == nil {
		return nil
	}
	if errors.Is(err, errCallerGone) {
		return ctx.Err()
	}
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		g.count(ErrRejected)
		return &shutOff{fmt.Errorf("%w: %w", ErrUnavailable, err)}
	}
	kind, failed := classify(err)
	if kind != "" {
		g.count(kind)
	}
	if reason := errorType(err); slices.Contains(writeRefusals, reason) {
		g.fence.raise(reason, err)
	}
	if failed {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

func (g *Guard) count(k ErrorKind) { g.metrics.Error(context.Background(), k) }

// shutOff is a call the guard did not send: the breaker is open or the
// fence is up, Redis is known to be unavailable. Any other ErrUnavailable
// is one call that failed while Redis counted as up (a timeout on a busy
// machine): the coordinator may retry it (transient).
type shutOff struct{ error }

func (e *shutOff) Unwrap() error { return e.error }

// Transient reports whether err is one failed Redis call while Redis
// counts as up: ErrUnavailable, but not shutOff.
func Transient(err error) bool {
	var so *shutOff
	return errors.Is(err, ErrUnavailable) && !errors.As(err, &so)
}

// errCallerGone is a call ended by the caller's own cancellation: it says
// nothing about Redis.
var errCallerGone = errors.New("fleet: the caller has gone")

// unavailableReplies are the error replies that count against the breaker
// ("this server cannot serve now", and the write refusals of fence.go);
// any other reply means Redis works.
var unavailableReplies = append([]string{"LOADING", "MASTERDOWN", "BUSY", "TRYAGAIN", "CLUSTERDOWN"}, writeRefusals...)

// classify returns the kind of a call's error ("" for none, redis.Nil
// included) and whether it counts as a failure of Redis, from its
// error.type (errorType, hook.go).
func classify(err error) (ErrorKind, bool) {
	switch t := errorType(err); t {
	case "":
		return "", false
	case "timeout":
		return ErrTimeout, true
	case "canceled", "connection":
		return ErrConnection, true
	default:
		return ErrReply, slices.Contains(unavailableReplies, t)
	}
}

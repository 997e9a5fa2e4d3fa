package upstream

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/observability"
)

// The vocabulary of PMS calls (attempt outcomes, breaker states) is
// upstream's, as are its instruments; observability only provides the
// meter and the semantic-convention buckets.

// Span attributes and events of PMS calls.
const (
	// AttrBreakerState is closed, half_open or open (BreakerState.String).
	AttrBreakerState = attribute.Key("partner_edge.pms.breaker.state")
	// AttrPMSOutcome is an attempt's outcome (PMSOutcome).
	AttrPMSOutcome = attribute.Key("partner_edge.pms.outcome")
	// EventRetry is the span event of one retry (PMSMetrics.Retry).
	EventRetry = "pms.retry"
)

// PMSOutcome classifies one PMS attempt. A fixed set: it is a metric label.
type PMSOutcome string

const (
	PMSOK         PMSOutcome = "ok"         // a 2xx (or 3xx) answer
	PMSHTTP5xx    PMSOutcome = "http_5xx"   // the PMS answered 5xx
	PMSHTTP429    PMSOutcome = "http_429"   // the PMS shed load
	PMSHTTP4xx    PMSOutcome = "http_4xx"   // any other 4xx
	PMSConnection PMSOutcome = "connection" // dial, TLS, reset: no HTTP answer
	PMSTimeout    PMSOutcome = "timeout"    // the attempt's deadline passed
	// PMSCanceled is an attempt ended by the partner's own cancellation; it
	// never counts against the PMS (no retry, no breaker failure).
	PMSCanceled PMSOutcome = "canceled"
)

// PMSOutcomes lists every PMSOutcome.
var PMSOutcomes = []PMSOutcome{PMSOK, PMSHTTP5xx, PMSHTTP429, PMSHTTP4xx, PMSConnection, PMSTimeout, PMSCanceled}

// OutcomeOfStatus classifies an HTTP answer of the PMS.
func OutcomeOfStatus(status int) PMSOutcome {
	switch {
	case status == 429:
		return PMSHTTP429
	case status >= 500:
		return PMSHTTP5xx
	case status >= 400:
		return PMSHTTP4xx
	default:
		return PMSOK
	}
}

// BreakerState is a circuit breaker's state, recorded as a gauge value (the
// PMS breaker's here, the Redis breaker's in upstream/fleet).
type BreakerState int64

const (
	BreakerClosed   BreakerState = 0
	BreakerHalfOpen BreakerState = 1
	BreakerOpen     BreakerState = 2
)

// ParseBreakerState reads a state name: "closed", "half-open" (or
// "half_open"), "open"; anything else is BreakerOpen, the state that draws
// an SRE's eye.
func ParseBreakerState(name string) BreakerState {
	switch name {
	case "closed":
		return BreakerClosed
	case "half-open", "half_open":
		return BreakerHalfOpen
	}
	return BreakerOpen
}

var breakerStateNames = [...]string{BreakerClosed: "closed", BreakerHalfOpen: "half_open", BreakerOpen: "open"}

func (s BreakerState) String() string {
	if s < 0 || int(s) >= len(breakerStateNames) {
		return "unknown"
	}
	return breakerStateNames[s]
}

// PMSMetrics are the instruments of one PMS, labelled pms (live, test,
// candidate: a fixed name from configuration). As named in OTel
// (Prometheus name in brackets):
//
//   - partner_edge.pms.attempt.duration
//     (partner_edge_pms_attempt_duration_seconds): histogram, seconds, one
//     observation per PMS attempt (its _count is the number of attempts);
//     pms, outcome (PMSOutcome).
//   - partner_edge.pms.retries (partner_edge_pms_retries_total): attempts
//     after the first; pms, outcome (of the attempt that caused the retry).
//   - partner_edge.pms.breaker.state (partner_edge_pms_breaker_state): gauge,
//     0 closed, 1 half-open, 2 open; pms. Read when metrics are collected
//     (ObserveBreaker): the state at the scrape, also when no request came
//     to move an open breaker on to half-open after its timeout.
//   - partner_edge.pms.answers.refused
//     (partner_edge_pms_answers_refused_total): PMS answers the edge did
//     not believe (a stray answer, confirm.go; bytes on an idle
//     connection, idleguard.go); pms, reason (RefusalReasons).
//
// Its methods are safe for concurrent use and record without allocating.
type PMSMetrics struct {
	attempt     metric.Float64Histogram
	retries     metric.Int64Counter
	refused     metric.Int64Counter
	attemptOpts map[PMSOutcome][]metric.RecordOption // read-only after New
	retryOpts   map[PMSOutcome][]metric.AddOption
	refusedOpts map[string][]metric.AddOption
	// The breaker's state: read (ObserveBreaker's) when set, else the
	// last one recorded (BreakerState).
	read atomic.Pointer[func() BreakerState]
	last atomic.Int64
}

// NewPMSMetrics makes the instruments of the PMS called name on meter
// (cmd/edge passes the service's meter, observability.ScopeName; the same
// instruments serve every PMS). Call it once per PMS when wiring and keep
// the result: it records the breaker as closed.
func NewPMSMetrics(meter metric.Meter, name string) (*PMSMetrics, error) {
	p := &PMSMetrics{}
	var errs [4]error
	p.attempt, errs[0] = meter.Float64Histogram("partner_edge.pms.attempt.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of each HTTP attempt to the PMS, by outcome."),
		metric.WithExplicitBucketBoundaries(observability.DurationBuckets()...))
	p.retries, errs[1] = meter.Int64Counter("partner_edge.pms.retries",
		metric.WithUnit("{retry}"), metric.WithDescription("PMS attempts after the first, by the outcome that caused them."))
	breaker, err := meter.Int64ObservableGauge("partner_edge.pms.breaker.state",
		metric.WithDescription("Circuit breaker state: 0 closed, 1 half-open, 2 open."))
	errs[2] = err
	p.refused, errs[3] = meter.Int64Counter("partner_edge.pms.answers.refused",
		metric.WithUnit("{answer}"), metric.WithDescription("PMS answers not believed (a stray answer, bytes on an idle connection), by reason."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	pms := attribute.String("pms", strings.TrimSpace(name))
	// RegisterCallback, not WithInt64Callback: the PMSs share the
	// instrument, and the SDK keeps only the first creation's callbacks.
	breakerOpts := []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(pms))}
	if _, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		s := BreakerState(p.last.Load())
		if read := p.read.Load(); read != nil {
			s = (*read)()
		}
		o.ObserveInt64(breaker, int64(s), breakerOpts...)
		return nil
	}, breaker); err != nil {
		return nil, err
	}
	p.attemptOpts = make(map[PMSOutcome][]metric.RecordOption, len(PMSOutcomes))
	p.retryOpts = make(map[PMSOutcome][]metric.AddOption, len(PMSOutcomes))
	for _, o := range PMSOutcomes {
		set := metric.WithAttributeSet(attribute.NewSet(pms, attribute.String("outcome", string(o))))
		p.attemptOpts[o] = []metric.RecordOption{set}
		p.retryOpts[o] = []metric.AddOption{set}
	}
	p.refusedOpts = make(map[string][]metric.AddOption, len(RefusalReasons))
	for _, r := range RefusalReasons {
		p.refusedOpts[r] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(pms, attribute.String("reason", r)))}
	}
	return p, nil
}

// Attempt records one HTTP attempt to the PMS and how it ended. An outcome
// outside PMSOutcomes is recorded as connection.
func (p *PMSMetrics) Attempt(ctx context.Context, outcome PMSOutcome, elapsed time.Duration) {
	o, ok := p.attemptOpts[outcome]
	if !ok {
		o = p.attemptOpts[PMSConnection]
	}
	p.attempt.Record(ctx, elapsed.Seconds(), o...)
}

// Retry counts one retry, caused by an attempt that ended with cause, and
// adds a "pms.retry" event (AttrPMSOutcome) to the recording span of ctx
// (the logical PMS call's); in a walk that counts (WithWalkStats), only
// the first RetryEventsPerWalk, below the SDK's event limit.
func (p *PMSMetrics) Retry(ctx context.Context, cause PMSOutcome) {
	o, ok := p.retryOpts[cause]
	if !ok {
		o, cause = p.retryOpts[PMSConnection], PMSConnection
	}
	p.retries.Add(ctx, 1, o...)
	if st := WalkStatsFrom(ctx); st != nil && !st.retryEvent() {
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(EventRetry, trace.WithAttributes(AttrPMSOutcome.String(string(cause))))
	}
}

// BreakerState records the breaker's state, for a breaker ObserveBreaker
// does not read (closed until then).
func (p *PMSMetrics) BreakerState(_ context.Context, s BreakerState) {
	p.last.Store(int64(s))
}

// ObserveBreaker makes the gauge read state whenever metrics are
// collected (a client's breaker: newBreaker). state must be quick and
// safe for concurrent use.
func (p *PMSMetrics) ObserveBreaker(state func() BreakerState) {
	p.read.Store(&state)
}

// Refused counts one PMS answer the edge did not believe, for reason (one
// of RefusalReasons; any other is not counted).
func (p *PMSMetrics) Refused(ctx context.Context, reason string) {
	if o, ok := p.refusedOpts[reason]; ok {
		p.refused.Add(ctx, 1, o...)
	}
}

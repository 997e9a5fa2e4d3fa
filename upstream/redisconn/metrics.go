package redisconn

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// Use names what an instance falls back for. A fixed set: a metric label.
type Use string

const (
	UseRateLimit    Use = "rate_limit"    // per-key quotas
	UseAuthThrottle Use = "auth_throttle" // failed-authentication throttle
	UseSnapshot     Use = "snapshot"      // shared snapshot loads
)

// Uses lists every Use.
var Uses = []Use{UseRateLimit, UseAuthThrottle, UseSnapshot}

// Fallbacks counts answers given in-process because Redis could not give
// them (Client implements it). The edge's redislimit.Limiter counts
// one on each error, then decides with its own in-process limiter.
type Fallbacks interface {
	Fallback(ctx context.Context, use Use, err error)
}

// ErrorKind classifies a failed Redis call. A fixed set: a metric label.
type ErrorKind string

const (
	ErrTimeout    ErrorKind = "timeout"    // the call's deadline passed
	ErrConnection ErrorKind = "connection" // dial, reset, closed: no answer
	ErrReply      ErrorKind = "reply"      // Redis answered with an error
	ErrRejected   ErrorKind = "rejected"   // the breaker refused the call
)

// ErrorKinds lists every ErrorKind.
var ErrorKinds = []ErrorKind{ErrTimeout, ErrConnection, ErrReply, ErrRejected}

// dbDurationBuckets are the semantic-convention boundaries of
// db.client.operation.duration, in seconds.
var dbDurationBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10}

// Metrics are the instruments of one Redis client (docs/scaling.md,
// Telemetry and When Redis fails): db.client.operation.duration per
// command, partner_edge.redis.errors by kind and partner_edge.redis.fallbacks
// by use (each label pre-registered at 0), partner_edge.redis.breaker.state.
type Metrics struct {
	duration  metric.Float64Histogram
	errors    metric.Int64Counter
	fallbacks metric.Int64Counter
	breaker   metric.Int64Gauge

	server    []attribute.KeyValue // db.system.name, server.address, server.port
	errOpts   map[ErrorKind][]metric.AddOption
	fbOpts    map[Use][]metric.AddOption
	durations sync.Map     // durKey -> []metric.RecordOption
	nDur      atomic.Int64 // entries stored in durations
}

type durKey struct{ op, errType string }

// maxDurSets bounds the cached attribute sets of the histogram.
const maxDurSets = 128

// NewMetrics creates the instruments on meter (nil: no-op) for the server
// at host:port.
func NewMetrics(meter metric.Meter, host string, port int) (*Metrics, error) {
	meter = cmp.Or[metric.Meter](meter, noop.NewMeterProvider().Meter(observability.ScopeName))
	m := &Metrics{server: serverAttrs(host, port)}
	var errs [4]error
	m.duration, errs[0] = meter.Float64Histogram("db.client.operation.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of database client operations."),
		metric.WithExplicitBucketBoundaries(dbDurationBuckets...))
	m.errors, errs[1] = meter.Int64Counter("partner_edge.redis.errors",
		metric.WithUnit("{call}"), metric.WithDescription("Failed Redis calls by kind: timeout, connection, reply, rejected."))
	m.fallbacks, errs[2] = meter.Int64Counter("partner_edge.redis.fallbacks",
		metric.WithUnit("{call}"), metric.WithDescription("Answers given in-process because Redis failed, by use."))
	m.breaker, errs[3] = meter.Int64Gauge("partner_edge.redis.breaker.state",
		metric.WithDescription("Redis circuit breaker state: 0 closed, 1 half-open, 2 open."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	ctx := context.Background()
	m.errOpts = make(map[ErrorKind][]metric.AddOption, len(ErrorKinds))
	for _, k := range ErrorKinds {
		m.errOpts[k] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("kind", string(k))))}
		m.errors.Add(ctx, 0, m.errOpts[k]...)
	}
	m.fbOpts = make(map[Use][]metric.AddOption, len(Uses))
	for _, u := range Uses {
		m.fbOpts[u] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("use", string(u))))}
		m.fallbacks.Add(ctx, 0, m.fbOpts[u]...)
	}
	m.BreakerState(ctx, upstream.BreakerClosed)
	return m, nil
}

func serverAttrs(host string, port int) []attribute.KeyValue {
	return []attribute.KeyValue{semconv.DBSystemNameRedis, semconv.ServerAddress(host), semconv.ServerPort(port)}
}

// Command records one Redis command; errType is "" on success.
func (m *Metrics) Command(ctx context.Context, op, errType string, elapsed time.Duration) {
	m.duration.Record(ctx, elapsed.Seconds(), m.durOpts(op, errType)...)
}

func (m *Metrics) durOpts(op, errType string) []metric.RecordOption {
	k := durKey{op, errType}
	if o, ok := m.durations.Load(k); ok {
		return o.([]metric.RecordOption)
	}
	kv := append(slices.Clone(m.server), semconv.DBOperationName(op))
	if errType != "" {
		kv = append(kv, semconv.ErrorTypeKey.String(errType))
	}
	o := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kv...))}
	if m.nDur.Add(1) <= maxDurSets {
		m.durations.Store(k, o)
	}
	return o
}

// Error counts one failed guarded call. An unknown kind counts as
// connection.
func (m *Metrics) Error(ctx context.Context, kind ErrorKind) {
	o, ok := m.errOpts[kind]
	if !ok {
		o = m.errOpts[ErrConnection]
	}
	m.errors.Add(ctx, 1, o...)
}

// Fallback counts one answer given in-process for use. An unknown use is
// ignored.
func (m *Metrics) Fallback(ctx context.Context, use Use) {
	if o, ok := m.fbOpts[use]; ok {
		m.fallbacks.Add(ctx, 1, o...)
	}
}

// BreakerState records the breaker's state.
func (m *Metrics) BreakerState(ctx context.Context, s upstream.BreakerState) {
	m.breaker.Record(ctx, int64(s), metric.WithAttributes(m.server...))
}

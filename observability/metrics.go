package observability

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of the service's own meters and
// tracers.
const ScopeName = "github.com/partner-edge/partner-edge/observability"

// durationBuckets are the semantic-convention boundaries for
// http.server.request.duration, in seconds; PMS attempts use them too.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

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

// CacheOutcome is how a cache lookup was served. A fixed set: a metric label.
type CacheOutcome string

const (
	CacheHit       CacheOutcome = "hit"       // fresh entry served
	CacheMiss      CacheOutcome = "miss"      // loaded from the PMS
	CacheStale     CacheOutcome = "stale"     // old entry served because the PMS failed
	CacheCoalesced CacheOutcome = "coalesced" // waited for another caller's load
)

// CacheOutcomes lists every CacheOutcome.
var CacheOutcomes = []CacheOutcome{CacheHit, CacheMiss, CacheStale, CacheCoalesced}

// BreakerState is the circuit breaker's state, recorded as a gauge value.
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

func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerHalfOpen:
		return "half_open"
	case BreakerOpen:
		return "open"
	}
	return "unknown"
}

// Metrics are the service's instruments. Every method is safe for concurrent
// use, takes only bounded values (codes, reasons, outcomes, route templates:
// never anything a partner sent verbatim) and, once a label combination has
// been seen, records without allocating.
//
// The instruments, as named in OTel (Prometheus name in brackets):
//
//   - http.server.request.duration (http_server_request_duration_seconds):
//     histogram, seconds, semconv buckets; http.request.method,
//     http.route (the route template; absent when no route matched),
//     http.response.status_code, and partner_edge.cache.outcome (hit,
//     miss, stale, coalesced) on requests the cache answered (the SLO
//     tells cached answers from misses by it; absent otherwise). Recorded
//     by RequestDone.
//   - http.server.active_requests (http_server_active_requests): up-down
//     counter of requests in flight; http.request.method.
//   - partner_edge.pms.attempt.duration
//     (partner_edge_pms_attempt_duration_seconds): histogram, seconds, one
//     observation per PMS attempt (its _count is the number of attempts);
//     pms (live, sandbox), outcome (PMSOutcome).
//   - partner_edge.pms.retries (partner_edge_pms_retries_total): attempts
//     after the first; pms, outcome (of the attempt that caused the retry).
//   - partner_edge.pms.breaker.state (partner_edge_pms_breaker_state): gauge,
//     0 closed, 1 half-open, 2 open; pms.
//   - partner_edge.cache.lookups (partner_edge_cache_lookups_total): pms,
//     outcome (hit, miss, stale, coalesced), each pre-registered at 0.
//   - partner_edge.cache.load_panics (partner_edge_cache_load_panics_total):
//     loads of the cache that panicked and were recovered; pms.
//   - (partner_edge.mapping.rejections is upstream's: RejectionMetrics.)
//   - partner_edge.keys.reloads (partner_edge_keys_reloads_total): key file
//     loads; result (ok, failed), both pre-registered at 0.
//   - partner_edge.problem.responses (partner_edge_problem_responses_total):
//     problem+json answers; code (the problem code).
//   - partner_edge.auth.throttled (partner_edge_auth_throttled_total):
//     requests answered 429 by the failed-authentication throttle before
//     any key was looked at (their RATE_LIMITED is also in
//     problem.responses, with the per-key quota's); no attribute (client
//     addresses are unbounded), registered at 0.
//   - partner_edge.requests.shed (partner_edge_requests_shed_total):
//     requests answered 503 at once because EDGE_MAX_CONCURRENT were in
//     progress (their SERVICE_UNAVAILABLE is also in problem.responses, with
//     the PMS's); no attribute, registered at 0.
//   - partner_edge.tls.reloads (partner_edge_tls_reloads_total): reloads of
//     the TLS certificate after start-up; result (ok, failed), both
//     pre-registered at 0.
type Metrics struct {
	reqDuration metric.Float64Histogram
	active      metric.Int64UpDownCounter
	attempt     metric.Float64Histogram
	retries     metric.Int64Counter
	breaker     metric.Int64Gauge
	cache       metric.Int64Counter
	loadPanics  metric.Int64Counter
	reloads     metric.Int64Counter
	problems    metric.Int64Counter
	throttled   metric.Int64Counter
	shed        metric.Int64Counter
	tlsReloads  metric.Int64Counter

	activeOpts  map[string][]metric.AddOption // by canonical method, read-only
	problemOpts map[string][]metric.AddOption // guarded by mu
	reloadOpts  [2][]metric.AddOption         // failed, ok

	// reqOpts caches the attribute sets of RequestDone, copy-on-write: reads
	// are lock-free; mu serialises the rare insertions.
	reqOpts atomic.Pointer[map[reqKey][]metric.RecordOption]
	mu      sync.Mutex
}

type reqKey struct {
	method, route string
	status        int
	cache         CacheOutcome // "" when the cache did not answer
}

// maxReqSets bounds the RequestDone cache; past it, sets are built per call.
const maxReqSets = 512

// methods are the semconv known methods; any other is "_OTHER".
var methods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "QUERY"}

const otherMethod = "_OTHER"

func canonicalMethod(m string) string {
	for _, k := range methods {
		if k == m {
			return k
		}
	}
	return otherMethod
}

func addOpts(kv ...attribute.KeyValue) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kv...))}
}

func recordOpts(kv ...attribute.KeyValue) []metric.RecordOption {
	return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kv...))}
}

func newMetrics(mp metric.MeterProvider) (*Metrics, error) {
	meter := mp.Meter(ScopeName)
	m := &Metrics{}
	var err error
	if m.reqDuration, err = meter.Float64Histogram("http.server.request.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of HTTP server requests."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if m.active, err = meter.Int64UpDownCounter("http.server.active_requests",
		metric.WithUnit("{request}"), metric.WithDescription("Number of active HTTP server requests.")); err != nil {
		return nil, err
	}
	if m.attempt, err = meter.Float64Histogram("partner_edge.pms.attempt.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of each HTTP attempt to the PMS, by outcome."),
		metric.WithExplicitBucketBoundaries(durationBuckets...)); err != nil {
		return nil, err
	}
	if m.retries, err = meter.Int64Counter("partner_edge.pms.retries",
		metric.WithUnit("{retry}"), metric.WithDescription("PMS attempts after the first, by the outcome that caused them.")); err != nil {
		return nil, err
	}
	if m.breaker, err = meter.Int64Gauge("partner_edge.pms.breaker.state",
		metric.WithDescription("Circuit breaker state: 0 closed, 1 half-open, 2 open.")); err != nil {
		return nil, err
	}
	if m.cache, err = meter.Int64Counter("partner_edge.cache.lookups",
		metric.WithUnit("{lookup}"), metric.WithDescription("Cache lookups by outcome: hit, miss, stale, coalesced.")); err != nil {
		return nil, err
	}
	if m.loadPanics, err = meter.Int64Counter("partner_edge.cache.load_panics",
		metric.WithUnit("{panic}"), metric.WithDescription("Cache loads that panicked (recovered).")); err != nil {
		return nil, err
	}
	if m.reloads, err = meter.Int64Counter("partner_edge.keys.reloads",
		metric.WithUnit("{reload}"), metric.WithDescription("Key file loads by result: ok or failed.")); err != nil {
		return nil, err
	}
	if m.problems, err = meter.Int64Counter("partner_edge.problem.responses",
		metric.WithUnit("{response}"), metric.WithDescription("Problem responses by code.")); err != nil {
		return nil, err
	}

	m.activeOpts = make(map[string][]metric.AddOption, len(methods)+1)
	for _, k := range methods {
		m.activeOpts[k] = addOpts(semconv.HTTPRequestMethodKey.String(k))
	}
	m.activeOpts[otherMethod] = addOpts(semconv.HTTPRequestMethodKey.String(otherMethod))
	ctx := context.Background()
	m.problemOpts = map[string][]metric.AddOption{internalError: addOpts(attribute.String("code", internalError))}
	if m.throttled, err = meter.Int64Counter("partner_edge.auth.throttled",
		metric.WithUnit("{request}"), metric.WithDescription("Requests refused by the failed-authentication throttle, before any key was looked at.")); err != nil {
		return nil, err
	}
	m.throttled.Add(ctx, 0)
	m.reloadOpts[0] = addOpts(attribute.String("result", "failed"))
	m.reloadOpts[1] = addOpts(attribute.String("result", "ok"))
	for _, o := range m.reloadOpts {
		m.reloads.Add(ctx, 0, o...)
	}
	if m.shed, err = meter.Int64Counter("partner_edge.requests.shed",
		metric.WithUnit("{request}"), metric.WithDescription("Requests answered 503 at once because the concurrency cap was reached.")); err != nil {
		return nil, err
	}
	m.shed.Add(ctx, 0)
	if m.tlsReloads, err = meter.Int64Counter("partner_edge.tls.reloads",
		metric.WithUnit("{reload}"), metric.WithDescription("TLS certificate reloads after start-up by result: ok or failed.")); err != nil {
		return nil, err
	}
	for _, o := range m.reloadOpts {
		m.tlsReloads.Add(ctx, 0, o...)
	}
	empty := map[reqKey][]metric.RecordOption{}
	m.reqOpts.Store(&empty)
	return m, nil
}

// RequestStarted counts a request in flight. Pair every call with
// RequestDone (same method), typically first thing in the outermost
// middleware and deferred.
func (m *Metrics) RequestStarted(ctx context.Context, method string) {
	m.active.Add(ctx, 1, m.activeOpts[canonicalMethod(method)]...)
}

// RequestDone ends the in-flight count of RequestStarted and records the
// request's duration. route is the route template ("/v1/properties/{propertyId}"),
// or "" when no route matched (404, 405, trailing slash...): never the raw
// path. status is the status code sent.
//
// When ctx answers a *CacheSlot (CacheSlotKey) that PMSMetrics.Cache filled,
// the duration carries the request's cache outcome too.
func (m *Metrics) RequestDone(ctx context.Context, method, route string, status int, elapsed time.Duration) {
	method = canonicalMethod(method)
	m.active.Add(ctx, -1, m.activeOpts[method]...)
	var cache CacheOutcome
	if slot, ok := ctx.Value(CacheSlotKey{}).(*CacheSlot); ok {
		cache = slot.Outcome()
	}
	m.reqDuration.Record(ctx, elapsed.Seconds(), m.requestOpts(method, route, status, cache)...)
}

func (m *Metrics) requestOpts(method, route string, status int, cache CacheOutcome) []metric.RecordOption {
	k := reqKey{method, route, status, cache}
	if o, ok := (*m.reqOpts.Load())[k]; ok {
		return o
	}
	kv := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(method), semconv.HTTPResponseStatusCode(status)}
	if route != "" {
		kv = append(kv, semconv.HTTPRoute(route))
	}
	if cache != "" {
		kv = append(kv, AttrCacheOutcome.String(string(cache)))
	}
	o := recordOpts(kv...)
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.reqOpts.Load()
	if len(old) >= maxReqSets {
		return o
	}
	next := make(map[reqKey][]metric.RecordOption, len(old)+1)
	for k2, v := range old {
		next[k2] = v
	}
	next[k] = o
	m.reqOpts.Store(&next)
	return o
}

// Problem counts one problem+json response by its code (a problem.Code;
// the caller passes registered codes only). A code not shaped like one
// (upper-case letters and underscores, at most 40), or past the 64th
// distinct code, is counted as INTERNAL_ERROR: labels stay bounded.
func (m *Metrics) Problem(ctx context.Context, code string) {
	m.problems.Add(ctx, 1, m.problemOpt(code)...)
}

const internalError = "INTERNAL_ERROR"

func (m *Metrics) problemOpt(code string) []metric.AddOption {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.problemOpts[code]; ok {
		return o
	}
	if !codeShaped(code) || len(m.problemOpts) >= 64 {
		return m.problemOpts[internalError]
	}
	o := addOpts(attribute.String("code", code))
	m.problemOpts[code] = o
	return o
}

func codeShaped(code string) bool {
	if code == "" || len(code) > 40 {
		return false
	}
	for _, r := range code {
		if (r < 'A' || r > 'Z') && r != '_' {
			return false
		}
	}
	return true
}

// AuthThrottled counts one request refused by the failed-authentication
// throttle.
func (m *Metrics) AuthThrottled(ctx context.Context) { m.throttled.Add(ctx, 1) }

// Shed counts one request refused by the concurrency cap.
func (m *Metrics) Shed(ctx context.Context) { m.shed.Add(ctx, 1) }

// TLSReload counts one reload of the TLS certificate after start-up.
func (m *Metrics) TLSReload(ctx context.Context, ok bool) {
	i := 0
	if ok {
		i = 1
	}
	m.tlsReloads.Add(ctx, 1, m.reloadOpts[i]...)
}

// KeyReload counts one load of the key file (start-up, SIGHUP or change).
func (m *Metrics) KeyReload(ctx context.Context, ok bool) {
	i := 0
	if ok {
		i = 1
	}
	m.reloads.Add(ctx, 1, m.reloadOpts[i]...)
}

// PMS returns the instruments of one PMS, labelled pms=name ("live",
// "sandbox": a fixed name from configuration). Call it once per PMS when
// wiring, and keep the result: it records the breaker as closed and
// registers every cache outcome at 0.
func (m *Metrics) PMS(name string) *PMSMetrics {
	name = strings.TrimSpace(name)
	pms := attribute.String("pms", name)
	p := &PMSMetrics{m: m,
		attempt: make(map[PMSOutcome][]metric.RecordOption, len(PMSOutcomes)),
		retry:   make(map[PMSOutcome][]metric.AddOption, len(PMSOutcomes)),
		cache:   make(map[CacheOutcome][]metric.AddOption, len(CacheOutcomes)),
		breaker: recordOpts(pms),
		panics:  addOpts(pms),
	}
	m.loadPanics.Add(context.Background(), 0, p.panics...)
	for _, o := range PMSOutcomes {
		p.attempt[o] = recordOpts(pms, attribute.String("outcome", string(o)))
		p.retry[o] = addOpts(pms, attribute.String("outcome", string(o)))
	}
	ctx := context.Background()
	for _, o := range CacheOutcomes {
		p.cache[o] = addOpts(pms, attribute.String("outcome", string(o)))
		m.cache.Add(ctx, 0, p.cache[o]...)
	}
	p.BreakerState(ctx, BreakerClosed)
	return p
}

// PMSMetrics are the instruments of one PMS (see Metrics for names).
type PMSMetrics struct {
	m       *Metrics
	attempt map[PMSOutcome][]metric.RecordOption
	retry   map[PMSOutcome][]metric.AddOption
	cache   map[CacheOutcome][]metric.AddOption
	breaker []metric.RecordOption
	panics  []metric.AddOption
}

// Attempt records one HTTP attempt to the PMS and how it ended. An outcome
// outside PMSOutcomes is recorded as connection.
func (p *PMSMetrics) Attempt(ctx context.Context, outcome PMSOutcome, elapsed time.Duration) {
	o, ok := p.attempt[outcome]
	if !ok {
		o = p.attempt[PMSConnection]
	}
	p.m.attempt.Record(ctx, elapsed.Seconds(), o...)
}

// Retry counts one retry, caused by an attempt that ended with cause, and
// adds a "pms.retry" event (AttrPMSOutcome) to the recording span of ctx (the
// logical PMS call's).
func (p *PMSMetrics) Retry(ctx context.Context, cause PMSOutcome) {
	o, ok := p.retry[cause]
	if !ok {
		o, cause = p.retry[PMSConnection], PMSConnection
	}
	p.m.retries.Add(ctx, 1, o...)
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(EventRetry, trace.WithAttributes(AttrPMSOutcome.String(string(cause))))
	}
}

// LoadPanic counts one recovered panic in a cache load of this PMS.
func (p *PMSMetrics) LoadPanic(ctx context.Context) {
	p.m.loadPanics.Add(ctx, 1, p.panics...)
}

// BreakerState records the breaker's state; call it on every transition.
func (p *PMSMetrics) BreakerState(ctx context.Context, s BreakerState) {
	p.m.breaker.Record(ctx, int64(s), p.breaker...)
}

// Cache counts one cache lookup by how it was served, adds a
// "cache.lookup" event (AttrCacheOutcome) to the recording span of ctx, and
// notes the outcome in the request's CacheSlot, if ctx has one. An outcome
// outside CacheOutcomes is ignored.
func (p *PMSMetrics) Cache(ctx context.Context, outcome CacheOutcome) {
	o, ok := p.cache[outcome]
	if !ok {
		return
	}
	p.m.cache.Add(ctx, 1, o...)
	if slot, ok := ctx.Value(CacheSlotKey{}).(*CacheSlot); ok {
		slot.set(outcome)
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(EventCacheLookup, trace.WithAttributes(AttrCacheOutcome.String(string(outcome))))
	}
}

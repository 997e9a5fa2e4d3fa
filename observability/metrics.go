package observability

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// ScopeName is the instrumentation scope of the service's own meters and
// tracers.
const ScopeName = "github.com/partner-edge/partner-edge/observability"

// DurationBuckets returns the semantic-convention boundaries for
// http.server.request.duration, in seconds (a fresh slice); PMS attempts
// (upstream.PMSMetrics) use them too.
func DurationBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
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
//   - (the partner_edge.pms.* instruments are upstream's: upstream.PMSMetrics;
//     partner_edge.cache.* are upstream/cache's: cache.Metrics;
//     partner_edge.mapping.rejections is upstream's: upstream.RejectionMetrics.)
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
	active      *Counters // by methodIndex: atomic adds, observed (counters.go)
	reloads     metric.Int64Counter
	problems    metric.Int64Counter
	throttled   metric.Int64Counter
	shed        metric.Int64Counter
	tlsReloads  metric.Int64Counter

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
	cache         attribute.KeyValue // the CacheSlot's label; empty when the cache did not answer
}

// maxReqSets bounds the RequestDone cache; past it, sets are built per call.
const maxReqSets = 512

// methods are the semconv known methods; any other is "_OTHER".
var methods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "QUERY"}

const otherMethod = "_OTHER"

func canonicalMethod(m string) string { return methodName(methodIndex(m)) }

// methodName is the canonical method of index i (methodIndex).
func methodName(i int) string {
	if i < len(methods) {
		return methods[i]
	}
	return otherMethod
}

// methodIndex is m's index in methods, or len(methods) for any other.
func methodIndex(m string) int {
	for i, k := range methods {
		if k == m {
			return i
		}
	}
	return len(methods)
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
		metric.WithExplicitBucketBoundaries(DurationBuckets()...)); err != nil {
		return nil, err
	}
	activeSets := make([]attribute.Set, len(methods)+1)
	for i, k := range methods {
		activeSets[i] = attribute.NewSet(semconv.HTTPRequestMethodKey.String(k))
	}
	activeSets[len(methods)] = attribute.NewSet(semconv.HTTPRequestMethodKey.String(otherMethod))
	if m.active, err = NewCounters(meter, UpDown, "http.server.active_requests", "{request}",
		"Number of active HTTP server requests.", activeSets, false); err != nil {
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
	m.active.Add(methodIndex(method), 1)
}

// RequestDone ends the in-flight count of RequestStarted and records the
// request's duration. route is the route template ("/v1/properties/{propertyId}"),
// or "" when no route matched (404, 405, trailing slash...): never the raw
// path. status is the status code sent.
//
// When ctx answers a *CacheSlot (CacheSlotKey) that the cache filled
// (upstream/cache's Metrics.Lookup), the duration carries the request's
// cache outcome label too.
func (m *Metrics) RequestDone(ctx context.Context, method, route string, status int, elapsed time.Duration) {
	i := methodIndex(method)
	m.active.Add(i, -1)
	method = methodName(i)
	var cache attribute.KeyValue
	if slot, ok := ctx.Value(CacheSlotKey{}).(*CacheSlot); ok {
		cache, _ = slot.Attr()
	}
	m.reqDuration.Record(ctx, elapsed.Seconds(), m.requestOpts(method, route, status, cache)...)
}

func (m *Metrics) requestOpts(method, route string, status int, cache attribute.KeyValue) []metric.RecordOption {
	k := reqKey{method, route, status, cache}
	if o, ok := (*m.reqOpts.Load())[k]; ok {
		return o
	}
	kv := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(method), semconv.HTTPResponseStatusCode(status)}
	if route != "" {
		kv = append(kv, semconv.HTTPRoute(route))
	}
	if cache.Valid() {
		kv = append(kv, cache)
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

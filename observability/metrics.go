package observability

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
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

// Metrics are the service's own instruments: the HTTP server's and the
// edge's counters (docs/observability.md, "Metrics", lists them; upstream
// and upstream/cache own the partner_edge.pms.*, .cache.* and .mapping.*
// ones). Every method is safe for concurrent use, takes only bounded values
// (codes, reasons, outcomes, route templates: never anything a partner sent
// verbatim) and, once a label combination has been seen, records without
// allocating.
type Metrics struct {
	reqDuration metric.Float64Histogram
	active      *Counters // by methodIndex: atomic adds, observed (Counters)
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

// methods are the semconv known methods, then otherMethod for any other.
var methods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "QUERY", otherMethod}

const otherMethod = "_OTHER"

func canonicalMethod(m string) string { return methods[methodIndex(m)] }

// methodIndex is m's index in methods (otherMethod's for any other).
func methodIndex(m string) int {
	if i := slices.Index(methods[:len(methods)-1], m); i >= 0 {
		return i
	}
	return len(methods) - 1
}

func addOpts(kv ...attribute.KeyValue) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kv...))}
}

func newMetrics(mp metric.MeterProvider) (*Metrics, error) {
	meter, ctx := mp.Meter(ScopeName), context.Background()
	m := &Metrics{
		problemOpts: map[string][]metric.AddOption{internalError: addOpts(attribute.String("code", internalError))},
		reloadOpts:  [2][]metric.AddOption{addOpts(attribute.String("result", "failed")), addOpts(attribute.String("result", "ok"))},
	}
	var errs []error
	// counter makes an Int64Counter, registered at 0 with each of zeros (a
	// nil one: without attributes).
	counter := func(name, unit, desc string, zeros ...[]metric.AddOption) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if errs = append(errs, err); err == nil {
			for _, o := range zeros {
				c.Add(ctx, 0, o...)
			}
		}
		return c
	}
	var err error
	m.reqDuration, err = meter.Float64Histogram("http.server.request.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of HTTP server requests."),
		metric.WithExplicitBucketBoundaries(DurationBuckets()...))
	errs = append(errs, err)
	activeSets := make([]attribute.Set, len(methods))
	for i, k := range methods {
		activeSets[i] = attribute.NewSet(semconv.HTTPRequestMethodKey.String(k))
	}
	m.active, err = NewCounters(meter, UpDown, "http.server.active_requests", "{request}",
		"Number of active HTTP server requests.", activeSets, false)
	errs = append(errs, err)
	m.reloads = counter("partner_edge.keys.reloads", "{reload}", "Key file loads by result: ok or failed.", m.reloadOpts[:]...)
	m.problems = counter("partner_edge.problem.responses", "{response}", "Problem responses by code.")
	m.throttled = counter("partner_edge.auth.throttled", "{request}",
		"Requests refused by the failed-authentication throttle, before any key was looked at.", nil)
	m.shed = counter("partner_edge.requests.shed", "{request}",
		"Requests answered 503 at once because the concurrency cap was reached.", nil)
	m.tlsReloads = counter("partner_edge.tls.reloads", "{reload}",
		"TLS certificate reloads after start-up by result: ok or failed.", m.reloadOpts[:]...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	m.reqOpts.Store(&map[reqKey][]metric.RecordOption{})
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
	method = methods[i]
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
	o := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kv...))}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.reqOpts.Load()
	if len(old) >= maxReqSets {
		return o
	}
	next := maps.Clone(old)
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
	return code != "" && len(code) <= 40 && strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == ""
}

// AuthThrottled counts one request refused by the failed-authentication
// throttle.
func (m *Metrics) AuthThrottled(ctx context.Context) { m.throttled.Add(ctx, 1) }

// Shed counts one request refused by the concurrency cap.
func (m *Metrics) Shed(ctx context.Context) { m.shed.Add(ctx, 1) }

// TLSReload counts one reload of the TLS certificate after start-up.
func (m *Metrics) TLSReload(ctx context.Context, ok bool) {
	m.tlsReloads.Add(ctx, 1, m.reloadOpts[b2i(ok)]...)
}

// KeyReload counts one load of the key file (start-up, SIGHUP or change).
func (m *Metrics) KeyReload(ctx context.Context, ok bool) {
	m.reloads.Add(ctx, 1, m.reloadOpts[b2i(ok)]...)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// CacheSlotKey is the context key of a request's *CacheSlot. A request
// context of its own (the edge's) may answer Value(CacheSlotKey{}) with the
// slot it keeps in its per-request state, so the slot costs no context of
// its own.
type CacheSlotKey struct{}

// CacheSlot carries how the cache answered one request, from the cache
// (upstream/cache's Metrics.Lookup) to the request's duration metric
// (Metrics.RequestDone), so that the latency SLO can tell cached answers
// from misses. The label (partner_edge.cache.outcome=hit...) is the
// cache's vocabulary: observability passes it on and knows none of its
// values; the cache sets only its fixed few, so labels stay bounded. The
// first label set wins. The zero value is empty and ready to use; it is
// safe for concurrent use (a shared load may report from its own
// goroutine).
type CacheSlot struct {
	v atomic.Pointer[attribute.KeyValue]
}

// Set records kv unless a label was set before. kv must be one of a fixed
// few (it becomes a metric label); the caller keeps it, so Set does not
// allocate.
func (s *CacheSlot) Set(kv *attribute.KeyValue) { s.v.CompareAndSwap(nil, kv) }

// Attr is the first label set, and whether one was.
func (s *CacheSlot) Attr() (attribute.KeyValue, bool) {
	if kv := s.v.Load(); kv != nil {
		return *kv, true
	}
	return attribute.KeyValue{}, false
}

// Counters is a fixed family of int64 counters, one per attribute set,
// counted with atomic adds on the hot path and reported when a reader
// collects (an observable instrument whose callback reads them).
//
// Why: a synchronous instrument's Add walks the SDK's aggregation (the
// attribute set's map, the exemplar filter, which reads the span from the
// context) on every request, about half a microsecond each; these counters
// were three of a cached answer's four instrument calls. An atomic add is a
// few nanoseconds, and what is exported is the same cumulative sum.
// Exemplars are the cost: the hot counters carry none (the request
// duration histogram, still synchronous, does).
type Counters struct {
	slots []counterSlot
}

type counterSlot struct {
	n    atomic.Int64
	seen atomic.Bool // reported: from the first Add on, or from the start (NewCounters' reportAll)
	opt  []metric.ObserveOption
}

// CounterKind is the kind of instrument a Counters is reported as.
type CounterKind int

const (
	Monotonic CounterKind = iota // a counter: only ever added to
	UpDown                       // an up-down counter (in-flight requests)
)

// NewCounters registers the instrument name on meter (its unit and
// description as given) with one counter per attribute set of sets, in
// that order: Add(i, n) counts on sets[i]. A counter is reported from its
// first Add on, or from the start when reportAll is set (like a
// synchronous counter given Add(0) at start-up).
func NewCounters(meter metric.Meter, kind CounterKind, name, unit, description string, sets []attribute.Set, reportAll bool) (*Counters, error) {
	c := &Counters{slots: make([]counterSlot, len(sets))}
	for i, s := range sets {
		c.slots[i].opt = []metric.ObserveOption{metric.WithAttributeSet(s)}
		c.slots[i].seen.Store(reportAll)
	}
	var inst metric.Int64Observable
	var err error
	if kind == UpDown {
		inst, err = meter.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(description))
	} else {
		inst, err = meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(description))
	}
	if err != nil {
		return nil, err
	}
	// RegisterCallback, not WithInt64Callback: families of the same name
	// (the caches of the live and sandbox PMSs) share the instrument, and
	// the SDK keeps only the first creation's callbacks.
	if _, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for i := range c.slots {
			if s := &c.slots[i]; s.seen.Load() {
				o.ObserveInt64(inst, s.n.Load(), s.opt...)
			}
		}
		return nil
	}, inst); err != nil {
		return nil, err
	}
	return c, nil
}

// Add adds n to counter i (an index into NewCounters' sets). For a
// Monotonic family n must not be negative.
func (c *Counters) Add(i int, n int64) {
	s := &c.slots[i]
	s.n.Add(n)
	if !s.seen.Load() {
		s.seen.Store(true)
	}
}

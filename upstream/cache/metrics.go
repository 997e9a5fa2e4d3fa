package cache

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/observability"
)

// The vocabulary of cache lookups (the Outcome constants of config.go) is
// the cache's, as are its instruments and span attribute.

// Span attribute and event of cache lookups.
const (
	// AttrCacheOutcome is hit, miss, stale or coalesced (LookupOutcomes),
	// set on the caller's span.
	AttrCacheOutcome = attribute.Key("partner_edge.cache.outcome")
	// EventCacheLookup is the span event of one lookup (Metrics.Lookup).
	EventCacheLookup = "cache.lookup"
)

// LookupOutcomes lists the outcomes of a caller's lookup, each a value of
// the outcome label (refreshes and panics are counted apart).
var LookupOutcomes = []string{OutcomeHit, OutcomeMiss, OutcomeStale, OutcomeCoalesced}

// Metrics are the instruments of the cache of one PMS, labelled pms (live,
// test, candidate: a fixed name from configuration). As named in OTel
// (Prometheus name in brackets):
//
//   - partner_edge.cache.lookups (partner_edge_cache_lookups_total): pms,
//     outcome (LookupOutcomes), each pre-registered at 0.
//   - partner_edge.cache.load_panics (partner_edge_cache_load_panics_total):
//     loads of the cache that panicked and were recovered; pms.
//
// Its methods are safe for concurrent use and record without allocating.
type Metrics struct {
	lookups    *observability.Counters // by index in LookupOutcomes: atomic adds, observed
	loadPanics metric.Int64Counter
	// by outcome: its index in LookupOutcomes and its label for the
	// request's CacheSlot; read-only after New
	outcomes  map[string]lookupOutcome
	panicOpts []metric.AddOption
}

// NewMetrics makes the instruments of the cache of the PMS called name on
// meter (cmd/edge passes the service's meter, observability.ScopeName; the
// same instruments serve every PMS) and registers every series at 0.
func NewMetrics(meter metric.Meter, name string) (*Metrics, error) {
	m := &Metrics{}
	var err error
	if m.loadPanics, err = meter.Int64Counter("partner_edge.cache.load_panics",
		metric.WithUnit("{panic}"), metric.WithDescription("Cache loads that panicked (recovered).")); err != nil {
		return nil, err
	}
	pms := attribute.String("pms", strings.TrimSpace(name))
	m.panicOpts = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(pms))}
	m.loadPanics.Add(context.Background(), 0, m.panicOpts...)
	m.outcomes = make(map[string]lookupOutcome, len(LookupOutcomes))
	sets := make([]attribute.Set, len(LookupOutcomes))
	for i, o := range LookupOutcomes {
		kv := AttrCacheOutcome.String(o)
		m.outcomes[o] = lookupOutcome{i, &kv}
		sets[i] = attribute.NewSet(pms, attribute.String("outcome", o))
	}
	if m.lookups, err = observability.NewCounters(meter, observability.Monotonic, "partner_edge.cache.lookups",
		"{lookup}", "Cache lookups by outcome: hit, miss, stale, coalesced.", sets, true); err != nil {
		return nil, err
	}
	return m, nil
}

// Lookup counts one cache lookup by how it was served, adds a
// "cache.lookup" event (AttrCacheOutcome) to the recording span of ctx,
// and notes the outcome in the request's observability.CacheSlot, if ctx
// has one (the request duration's partner_edge.cache.outcome label). An
// outcome outside LookupOutcomes is ignored.
func (m *Metrics) Lookup(ctx context.Context, outcome string) {
	o, ok := m.outcomes[outcome]
	if !ok {
		return
	}
	m.lookups.Add(o.index, 1)
	if slot, ok := ctx.Value(observability.CacheSlotKey{}).(*observability.CacheSlot); ok {
		slot.Set(o.label)
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(EventCacheLookup, trace.WithAttributes(AttrCacheOutcome.String(outcome)))
	}
}

type lookupOutcome struct {
	index int
	label *attribute.KeyValue
}

// LoadPanic counts one recovered panic in a cache load.
func (m *Metrics) LoadPanic(ctx context.Context) {
	m.loadPanics.Add(ctx, 1, m.panicOpts...)
}

package cache

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
// and of the walks of the PMS's list that its loads make (docs/contract.md
// section 24; a fleet member that takes another's publication walks
// nothing; with TTL 0 each read's walk is its own and not counted):
//
//   - partner_edge.pms.walks (partner_edge_pms_walks_total): walks ended;
//     pms, outcome (ok, failed), each pre-registered at 0.
//   - partner_edge.pms.walk.pages (partner_edge_pms_walk_pages_total):
//     list pages received by walks; pms.
//   - partner_edge.pms.walk.duration
//     (partner_edge_pms_walk_duration_seconds): gauge, the duration of
//     the last walk of each outcome, the PMS walk alone (a fleet member's
//     wait for another's lease is not in it); pms, outcome.
//   - partner_edge.pms.walk.lease_wait
//     (partner_edge_pms_walk_lease_wait_seconds): gauge, how long the
//     last load of a fleet member waited for another member (its walk,
//     or its lease to expire) before walking or taking the publication;
//     pms; absent without a fleet.
//   - partner_edge.pms.walk.age (partner_edge_pms_walk_age_seconds):
//     gauge, how long ago the walk of the snapshot served ended (for a
//     fleet member, the publisher's walk): the age of the snapshot this
//     instance serves; pms; absent until one did.
//   - partner_edge.cache.ttl (partner_edge_cache_ttl_seconds): gauge,
//     EDGE_CACHE_TTL, the age at which a snapshot is walked again; pms.
//     The stale-snapshot alert compares the age with it (TTL plus two
//     walks), so the rules hold whatever the setting.
//
// Its methods are safe for concurrent use and record without allocating.
type Metrics struct {
	lookups    *observability.Counters // by index in LookupOutcomes: atomic adds, observed
	loadPanics metric.Int64Counter
	walks      metric.Int64Counter
	walkPages  metric.Int64Counter
	walkTime   metric.Float64Gauge
	leaseWait  metric.Float64Gauge
	pmsOpts    []metric.AddOption       // pms
	pmsRecord  []metric.RecordOption    // pms
	walkOpts   [2][]metric.AddOption    // ok, failed
	timeOpts   [2][]metric.RecordOption // ok, failed
	// walkEnd is when the walk of the snapshot served ended (unix
	// nanoseconds; 0: none yet), read by walk.age's callback.
	walkEnd atomic.Int64
	ttl     atomic.Int64 // EDGE_CACHE_TTL (SetTTL), read by cache.ttl's callback
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
	if err := m.walkInstruments(meter, pms); err != nil {
		return nil, err
	}
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

// walkInstruments makes the walk instruments (see Metrics).
func (m *Metrics) walkInstruments(meter metric.Meter, pms attribute.KeyValue) error {
	var errs [6]error
	m.walks, errs[0] = meter.Int64Counter("partner_edge.pms.walks", metric.WithUnit("{walk}"),
		metric.WithDescription("Walks of the PMS's list that ended, by outcome (ok, failed)."))
	m.walkPages, errs[1] = meter.Int64Counter("partner_edge.pms.walk.pages", metric.WithUnit("{page}"),
		metric.WithDescription("List pages received by walks of the PMS."))
	m.walkTime, errs[2] = meter.Float64Gauge("partner_edge.pms.walk.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the last walk of the PMS's list, by outcome (ok, failed)."))
	age, err := meter.Float64ObservableGauge("partner_edge.pms.walk.age", metric.WithUnit("s"),
		metric.WithDescription("Time since the walk of the snapshot served ended."))
	errs[3] = err
	ttl, err := meter.Float64ObservableGauge("partner_edge.cache.ttl", metric.WithUnit("s"),
		metric.WithDescription("The cache TTL (EDGE_CACHE_TTL): a snapshot this old is walked again."))
	errs[4] = err
	m.leaseWait, errs[5] = meter.Float64Gauge("partner_edge.pms.walk.lease_wait", metric.WithUnit("s"),
		metric.WithDescription("How long the last load of a fleet member waited for another member's walk or lease."))
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	set := metric.WithAttributeSet(attribute.NewSet(pms))
	m.pmsOpts, m.pmsRecord = []metric.AddOption{set}, []metric.RecordOption{set}
	for i, o := range []string{"ok", "failed"} {
		s := metric.WithAttributeSet(attribute.NewSet(pms, attribute.String("outcome", o)))
		m.walkOpts[i], m.timeOpts[i] = []metric.AddOption{s}, []metric.RecordOption{s}
		m.walks.Add(context.Background(), 0, m.walkOpts[i]...)
	}
	m.walkPages.Add(context.Background(), 0, m.pmsOpts...)
	observe := []metric.ObserveOption{set}
	// RegisterCallback: the caches of the live and sandbox PMSs share the
	// instrument (observability.NewCounters says why).
	_, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if end := m.walkEnd.Load(); end != 0 {
			o.ObserveFloat64(age, max(time.Since(time.Unix(0, end)).Seconds(), 0), observe...)
		}
		o.ObserveFloat64(ttl, time.Duration(m.ttl.Load()).Seconds(), observe...)
		return nil
	}, age, ttl)
	return err
}

// Walk records one walk of the PMS's list that ended after d with pages
// received; ok: it succeeded.
func (m *Metrics) Walk(ctx context.Context, pages int64, d time.Duration, ok bool) {
	i := 0
	if !ok {
		i = 1
	}
	m.walks.Add(ctx, 1, m.walkOpts[i]...)
	m.walkPages.Add(ctx, pages, m.pmsOpts...)
	m.walkTime.Record(ctx, d.Seconds(), m.timeOpts[i]...)
}

// LeaseWait records that the last load of a fleet member waited d for
// another member's walk or lease (upstream.WalkStats.LeaseWait).
func (m *Metrics) LeaseWait(ctx context.Context, d time.Duration) {
	m.leaseWait.Record(ctx, d.Seconds(), m.pmsRecord...)
}

// Serving records that the snapshot served from now (the cache's clock,
// Config.Now) was walked at walkedAt (its upstream.Snapshot.LoadedAt, on
// the clock that stamped it): the walk.age gauge counts from there. The
// scrape reads time.Now, which an injected clock need not be, so the age
// is taken on the cache's clock and the walk's end kept on time.Now's.
func (m *Metrics) Serving(walkedAt, now time.Time) {
	if !walkedAt.IsZero() {
		m.walkEnd.Store(time.Now().Add(-now.Sub(walkedAt)).UnixNano())
	}
}

// SetTTL records the cache's TTL for the cache.ttl gauge.
func (m *Metrics) SetTTL(ttl time.Duration) { m.ttl.Store(int64(max(ttl, 0))) }

// LoadPanic counts one recovered panic in a cache load.
func (m *Metrics) LoadPanic(ctx context.Context) {
	m.loadPanics.Add(ctx, 1, m.panicOpts...)
}

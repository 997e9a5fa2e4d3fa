package cache

import (
	"log/slog"
	"time"

	"github.com/partner-edge/partner-edge/observability"
)

// Defaults of Config. They match EDGE_CACHE_TTL and EDGE_CACHE_STALE
// (DECISIONS.md section 9); a zero TTL is not defaulted, because zero means
// "no cache" (see Config.TTL).
const (
	DefaultTTL          = 30 * time.Second
	DefaultStale        = 5 * time.Minute
	DefaultLoadTimeout  = 5 * time.Second
	DefaultRefreshAhead = 0.8
)

// Outcomes reported through Config.OnOutcome.
const (
	// OutcomeHit: answered from a fresh entry, the PMS was not asked.
	OutcomeHit = "hit"
	// OutcomeMiss: this call started a load and got its result (data or error).
	OutcomeMiss = "miss"
	// OutcomeCoalesced: this call waited on a load another call had started.
	OutcomeCoalesced = "coalesced"
	// OutcomeStale: the load failed (PMS failure or the caller's deadline)
	// and an entry younger than Config.Stale was served instead.
	OutcomeStale = "stale"
	// OutcomeRefresh: a background refresh-ahead load was started. It is
	// reported in addition to the caller's own outcome (a hit).
	OutcomeRefresh = "refresh"
)

// Config tunes a Cache. The zero value is a disabled cache (TTL 0).
type Config struct {
	// Key names the data set: brand + "/" + mode (live or test), e.g.
	// "aurora/live". Each (brand, mode) has its own PMS and so its own Cache
	// wrapping it; the key is still part of every stored entry's key, so two
	// data sets can never meet even if a store were shared. Empty is allowed.
	Key string

	// TTL is how long loaded data is served without asking the PMS
	// (EDGE_CACHE_TTL). Zero or negative disables the cache entirely: every
	// call passes straight through to the inner Catalog, with no coalescing
	// and no stale data. The edge's default is DefaultTTL.
	TTL time.Duration

	// Stale is the greatest age at which data is still served when a load
	// fails with BAD_GATEWAY, SERVICE_UNAVAILABLE or GATEWAY_TIMEOUT (PMS
	// down, circuit open, too slow) (EDGE_CACHE_STALE). Entries are dropped
	// from the store at this age. Zero means DefaultStale; a value below TTL
	// is raised to TTL (no stale serving beyond the fresh window).
	Stale time.Duration

	// LoadTimeout bounds one shared load. A load runs detached from the
	// cancellation of the call that started it (so one partner giving up
	// never fails the others waiting on the same load) and needs a deadline
	// of its own. Zero means DefaultLoadTimeout.
	LoadTimeout time.Duration

	// RefreshAhead is the fraction of TTL after which a hit also starts a
	// background load, so that hot data is replaced before it expires and is
	// rarely served from a cold miss. At most one refresh per entry is in
	// flight. Zero or negative means DefaultRefreshAhead; 1 or more disables
	// refresh-ahead.
	RefreshAhead float64

	// Now returns the current time; ages of entries are measured with it.
	// Nil means time.Now. (The store drops entries on the wall clock, at
	// Stale; with an injected clock that is only a memory bound, every
	// freshness decision uses Now.)
	Now func() time.Time

	// Logger receives debug records of stale serves and failed background
	// refreshes. Nil discards them.
	Logger *slog.Logger

	// OnOutcome, if not nil, is called once per Snapshot or Property call
	// with OutcomeHit, OutcomeMiss, OutcomeCoalesced or OutcomeStale (not
	// when the caller's own context ended first, nor when the cache is
	// disabled), and with OutcomeRefresh when a background refresh starts.
	// It must be fast and safe for concurrent use (a metrics counter).
	OnOutcome func(outcome string)

	// Metrics, if not nil, counts every caller outcome (hit, miss, stale,
	// coalesced: each Snapshot or Property call that OnOutcome reports,
	// refreshes excepted) and adds a "cache.lookup" event to the span of
	// the caller's context. Nil means no metrics. Independently of it, the
	// outcome is set on the caller's upstream.CallStats, when its context
	// carries one (upstream.CallerIDs.Stats).
	Metrics *observability.PMSMetrics
}

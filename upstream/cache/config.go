package cache

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// Defaults of Config. They match EDGE_CACHE_TTL and EDGE_CACHE_STALE
// (docs/contract.md section 9); a zero TTL is not defaulted, because zero means
// "no cache" (see Config.TTL).
const (
	DefaultTTL         = 30 * time.Second
	DefaultStale       = 5 * time.Minute
	DefaultLoadTimeout = 5 * time.Second
	DefaultWalkTimeout = upstream.DefaultWalkTimeout
	// DefaultRefreshAhead: no refresh before TTL. The next walk starts
	// when a request finds the snapshot past TTL, i.e. TTL after the
	// previous walk ended, never sooner (docs/contract.md section 24), and
	// the held snapshot answers meanwhile.
	DefaultRefreshAhead = 1.0
	// DefaultRefreshBackoff is the first wait after a failed load before
	// the next background refresh; it doubles per failure in a row, up to
	// the TTL.
	DefaultRefreshBackoff = time.Second
	// DefaultWalkEvery is how often walks on the clock run with TTL 0
	// (nothing cached): they feed the events (docs/contract.md section 24).
	DefaultWalkEvery = 30 * time.Second
	// DefaultSnapshotWait is how long, at most, a request that needs a
	// snapshot none holds waits for the walk on the clock before its 503
	// (docs/contract.md section 24).
	DefaultSnapshotWait = 2 * time.Second
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
	// OutcomePanic: a load panicked; the panic was recovered and the
	// callers that waited got an upstream.Internal error. Reported in
	// addition to their outcomes.
	OutcomePanic = "panic"
)

// Loader loads the brand's snapshot for one (brand, mode): by default the
// inner Catalog's Snapshot. It is the seam for sharing loads between
// processes (a Redis-backed loader wraps the default one). It must return
// an *upstream.Error on failure (other errors are treated as
// upstream.Internal, or classified by upstream.Classify when the load's
// context ended) and a non-nil snapshot on success.
type Loader func(ctx context.Context) (*upstream.Snapshot, error)

// Config tunes a Cache. The zero value is a disabled cache (TTL 0).
type Config struct {
	// Key names the data set: brand + "/" + mode (live or test), e.g.
	// "aurora/live". Each (brand, mode) has its own PMS and so its own Cache
	// wrapping it; the key is still part of every stored entry's key, so two
	// data sets can never meet even if a store were shared. Empty is allowed.
	Key string

	// TTL is how long loaded data is served without asking the PMS
	// (EDGE_CACHE_TTL). Zero or negative disables the cache: every call
	// reads the inner Catalog and nothing is kept, but concurrent identical
	// calls (the snapshot, or one id) share one inner call; no stale data.
	// The edge's default is DefaultTTL.
	TTL time.Duration

	// Stale is the greatest age at which data is still served when a load
	// fails with upstream.BadGateway, Unavailable or Timeout (PMS down,
	// circuit open or shedding, too slow) (EDGE_CACHE_STALE). Zero means
	// DefaultStale; a value below TTL is raised to TTL (no stale serving
	// beyond the fresh window).
	Stale time.Duration

	// LoadTimeout bounds one shared load that is a partner's call: a get
	// with TTL 0, and with TTL 0 the list's walk too (EDGE_PMS_TIMEOUT). A
	// load runs detached from the cancellation of the call that started
	// it (so one partner giving up never fails the others waiting on the
	// same load) and needs a deadline of its own. Each caller waits at
	// most until its own context's deadline. Zero means
	// DefaultLoadTimeout.
	LoadTimeout time.Duration

	// WalkTimeout bounds one walk of the snapshot while the cache holds
	// snapshots (TTL > 0; EDGE_PMS_WALK_TIMEOUT): a background load with a
	// budget of its own, not a partner's call (docs/contract.md section
	// 24). A caller still waits only until its own deadline; one whose
	// deadline passes while the walk goes on gets upstream.Unavailable
	// with a RetryAfter (503), not a timeout. Zero means
	// DefaultWalkTimeout (10 min).
	WalkTimeout time.Duration

	// TokenSetting and URLSetting name the settings an operator fixes when
	// the PMS refuses the edge's token (401, 403) or cannot be reached
	// (e.g. "PMS_TOKEN", "PMS_BASE_URL"): a walk failing so is an error
	// line naming them, at most once per RefusalLogEvery (docs/contract.md
	// section 22). Empty: "the PMS token" and "the PMS address".
	TokenSetting, URLSetting string

	// RefreshAhead is the fraction of TTL after which a hit also starts a
	// background load (a fleet re-reads the shared snapshot at half the
	// TTL: upstream/fleet.RefreshAhead). At most one refresh per entry is
	// in flight. Past TTL a call always starts one and is answered from
	// the held snapshot meanwhile. Zero or negative means
	// DefaultRefreshAhead; 1 or more disables refresh-ahead.
	RefreshAhead float64

	// RefreshBackoff is the wait after a failed load before the next
	// background refresh, doubled per failure in a row up to TTL. Zero
	// means DefaultRefreshBackoff.
	RefreshBackoff time.Duration

	// WalkEvery is the period of the walks on the clock (Schedule) with
	// TTL 0, which feed the events while every read walks for itself.
	// Zero means DefaultWalkEvery. Unused with a TTL: walks then follow
	// it.
	WalkEvery time.Duration

	// SnapshotWait bounds how long a request that needs a snapshot none
	// holds waits for the walk on the clock (Schedule) before it gets
	// upstream.Unavailable with the walk's expected remaining time as
	// RetryAfter; its own deadline, if sooner, ends the wait too. Zero
	// means DefaultSnapshotWait.
	SnapshotWait time.Duration

	// LastWalk, when set, is the length of the last successful walk kept
	// outside this process (on disk, or a fleet's record): the
	// Retry-After of a request that waits for this process's first walk
	// counts from it. It returns 0 when it knows none. Nil: none; a first
	// walk's Retry-After is then the time it has run so far.
	LastWalk func() time.Duration

	// Load, when set, loads the snapshot instead of the inner Catalog's
	// Snapshot (see Loader).
	Load Loader

	// Now returns the current time; ages of snapshots and refresh backoff
	// are measured with it. Nil means time.Now.
	Now func() time.Time

	// Logger receives a debug record per stale serve, an info record per
	// finished walk (pages, records, rejected, duration), a warning per
	// failed background refresh, an error per panicked load and the
	// refusal errors (TokenSetting). Nil discards them.
	Logger *slog.Logger

	// OnOutcome, if not nil, is called once per Snapshot or Property call
	// with OutcomeHit, OutcomeMiss, OutcomeCoalesced or OutcomeStale (not
	// when the caller's own context ended first), with OutcomeRefresh when
	// a background refresh starts, and with OutcomePanic when a load
	// panicked. It must be fast and safe for concurrent use.
	OnOutcome func(outcome string)

	// Metrics, if not nil, counts every caller outcome (hit, miss, stale,
	// coalesced: each Snapshot or Property call that OnOutcome reports,
	// refreshes excepted) and adds a "cache.lookup" event to the span of
	// the caller's context. Nil means no metrics. Independently of it, the
	// outcome is set as the attribute partner_edge.cache.outcome on the
	// caller's recording span.
	Metrics *Metrics
	// Tracer makes the root span of each snapshot load (SpanWalk, walk.go);
	// nil: none.
	Tracer trace.Tracer
	// LinkRequest links a request's span to a walk (observability's
	// Telemetry.LinkRequest, which also keeps the link of a request whose
	// trace is decided at its end); nil: the span's AddLink.
	LinkRequest func(context.Context, trace.Link)
	// KeepWalk decides whether a walk is kept and gives the context to
	// start it under (Telemetry.KeepWalk). Nil: every walk is kept
	// (observability.KeepTrace).
	KeepWalk func(context.Context) (context.Context, bool)
	// KeepRequest marks the trace of a request that started a walk kept,
	// so that the walk's link to it opens (Telemetry.KeepRequest); false:
	// it cannot be, and the walk does not link to it. Nil: the request's
	// trace is kept when the head sampler kept it.
	KeepRequest func(context.Context) bool
	// LeadLoad claims that a request that led a load with TTL 0 be kept
	// for its followers' links (Telemetry.LeadLoad). Nil: the leader is
	// linked to when the head sampler kept it.
	LeadLoad func(context.Context) observability.Lead
}

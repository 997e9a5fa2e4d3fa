package events

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// Defaults of Config: EDGE_EVENTS_RETENTION, EDGE_EVENTS_MAX and
// EDGE_EVENTS_MAX_BYTES (docs/operations.md, which tells why 64 MiB fits
// the shipped manifest).
const (
	DefaultRetention = 168 * time.Hour
	DefaultMax       = 1_000_000
	DefaultMaxBytes  = 64 << 20
	// DefaultSyncEvery is how stale a fleet member's copy of the shared
	// feed may grow while partners read it before it is read again.
	DefaultSyncEvery = time.Second
)

// Config is one PMS's feed.
type Config struct {
	// Mode names the PMS ("live", "test"): the metrics' pms label; its
	// first letter tags the feed's cursors. Required.
	Mode string
	// Retention is how long events are kept (EDGE_EVENTS_RETENTION); zero
	// or less: DefaultRetention.
	Retention time.Duration
	// Max bounds the events kept (EDGE_EVENTS_MAX), the oldest dropped
	// first; zero or less: DefaultMax.
	Max int
	// MaxBytes bounds the memory the events kept take
	// (EDGE_EVENTS_MAX_BYTES), the oldest dropped first; zero or less:
	// DefaultMaxBytes.
	MaxBytes int64
	// Shared, when set, is where the feed is kept beyond this process's
	// memory: a fleet's one feed in Redis (this instance appends the walks
	// it makes, Walked, and serves what every member appended), or a
	// single edge's in EDGE_DATA_DIR (upstream/events/boltevents), which
	// outlives a restart. Nil: the feed lives in this process's memory
	// only.
	Shared Shared
	// Hold is how long a replaced snapshot stays held for the listings
	// pinned to it with asOf (EDGE_LIST_HOLD, AsOf); zero or less:
	// DefaultHold.
	Hold time.Duration
	// SyncEvery bounds the age of a fleet member's copy of the shared feed
	// while partners read it; zero or less: DefaultSyncEvery. Unused
	// without Shared.
	SyncEvery time.Duration
	// Now is the clock of retention and of the future check; nil:
	// time.Now.
	Now func() time.Time
	// Log gets a warning when the shared feed cannot be appended to or
	// read; nil: discard.
	Log *slog.Logger
	// Meter makes the feed's instruments (metrics.go); nil: none.
	Meter metric.Meter
	// Appended, when set, is called after events were added to the feed
	// (a walk of this instance, or what a read of the shared feed brought
	// in), so that what follows the feed looks now rather than at its
	// next poll (the webhooks' Deliverer.Wake). It must not block: it
	// runs under the feed's locks. Nil: none.
	Appended func()
}

// Feed is one PMS's feed of property changes. Safe for concurrent use;
// Close stops its background reads.
type Feed struct {
	cfg     Config
	tag     byte
	log     eventLog
	metrics *metrics            // nil: none
	holds   holds               // the snapshots listings may be pinned to (hold.go)
	holdReg metric.Registration // holdMetrics'; nil without metrics

	mu   sync.Mutex         // observe: one walk at a time, and base
	seen *upstream.Snapshot // the last snapshot observed
	base *baseline          // the walk events are diffed against; nil: none yet
	// unsure is this member's last walk whose append to the shared feed
	// failed without saying whether it landed (a timeout: Redis may run
	// the script after the client gave up); nil: none.
	unsure   *baseline
	next     atomic.Pointer[snapNext]
	walked   atomic.Int64           // Shared: the time (Unix ms) of the last walk this instance made
	took     atomic.Int64           // how long the last load that made a new snapshot ran (ns); 0: none yet
	throttle observability.Throttle // WARN lines about the shared feed (warn)
	headWalk atomic.Int64           // not Shared: the walk (Unix ms) the feed last reached; 0: none
	ownWalks bool                   // Shared: Walked wraps the walks, so a snapshot not walked here is another's

	// Shared: the copy of the shared feed.
	syncMu     sync.Mutex   // one read of the shared feed at a time
	sharedWalk atomic.Int64 // the shared feed's last walk as last read
	synced     atomic.Int64 // when it was last read (Now, Unix ns); 0: never
	// refused: the last read found the shared feed's position fields
	// forged (Forged.State), so sharedWalk may be behind the fleet's.
	refused    atomic.Bool
	lastShared atomic.Pointer[upstream.Snapshot]
	epoch      string // the shared feed's epoch the copy holds (syncMu); "": none
	alarms     alarms
	syncing    atomic.Bool
	bg         context.Context // ends with Close
	stop       context.CancelFunc
	closeMu    sync.Mutex // guards closed and the wg.Go calls
	closed     bool
	wg         sync.WaitGroup // background reads
}

// baseline is the walk events are diffed against: its time and snapshot.
type baseline struct {
	walk int64
	snap *upstream.Snapshot
}

// snapNext is the list cursor of one snapshot, encoded once.
type snapNext struct {
	snap *upstream.Snapshot
	next string
}

// New returns the feed cfg describes.
func New(cfg Config) (*Feed, error) {
	if cfg.Mode == "" {
		return nil, errors.New("events: the feed needs its mode")
	}
	cfg.Retention = cmp.Or(max(cfg.Retention, 0), DefaultRetention)
	cfg.Max = cmp.Or(max(cfg.Max, 0), DefaultMax)
	cfg.MaxBytes = cmp.Or(max(cfg.MaxBytes, 0), DefaultMaxBytes)
	cfg.SyncEvery = cmp.Or(max(cfg.SyncEvery, 0), DefaultSyncEvery)
	cfg.Hold = cmp.Or(max(cfg.Hold, 0), DefaultHold)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	f := &Feed{cfg: cfg, tag: cfg.Mode[0], log: eventLog{retention: cfg.Retention, max: cfg.Max, maxBytes: cfg.MaxBytes}}
	f.throttle.Now = cfg.Now
	f.holds.hold, f.holds.log, f.holds.mode, f.holds.tag = cfg.Hold, cfg.Log, cfg.Mode, f.tag
	f.bg, f.stop = context.WithCancel(context.Background())
	if cfg.Meter != nil {
		m, err := newMetrics(cfg.Meter, cfg.Mode, f.log.stats, f.log.held, f.head, cfg.Now)
		if err != nil {
			return nil, err
		}
		f.metrics = m
		if f.holdReg, err = holdMetrics(cfg.Meter, cfg.Mode, &f.holds); err != nil {
			m.close()
			return nil, err
		}
	}
	return f, nil
}

// head is the walk (Unix ms) the feed last reached, 0 before any: the
// single edge's last recorded walk, or the shared feed's last walk as
// this member last read it (events.head_age).
func (f *Feed) head() int64 {
	if f.cfg.Shared != nil {
		return f.sharedWalk.Load()
	}
	return f.headWalk.Load()
}

// Close stops the feed's background reads of the shared feed and its
// metrics' callback; it waits for a read in flight.
func (f *Feed) Close() {
	f.closeMu.Lock()
	f.closed = true
	f.closeMu.Unlock()
	f.stop()
	f.wg.Wait()
	if f.metrics != nil {
		f.metrics.close()
		_ = f.holdReg.Unregister()
	}
}

// Loader is the cache's load (cache.Loader's shape).
type Loader = func(ctx context.Context) (*upstream.Snapshot, error)

// Watch returns load, each snapshot it returns observed by the feed first:
// a walk's changes become events before any partner is served its
// snapshot. Install it around the cache's load (cache.PMSConfig.WrapLoad),
// outermost. A nil feed watches nothing: load itself.
func (f *Feed) Watch(load Loader) Loader {
	if f == nil {
		return load
	}
	return func(ctx context.Context) (*upstream.Snapshot, error) {
		start := f.cfg.Now()
		s, err := load(ctx)
		if err == nil && s != nil {
			f.observe(ctx, s, f.cfg.Now().Sub(start))
		}
		return s, err
	}
}

// walkTimer is a Shared that keeps the length of the last walk appended
// (boltevents: across a restart).
type walkTimer interface {
	LastWalk() time.Duration
}

// LastWalk is how long the last walk of this PMS took: this process's
// last load that made a new snapshot or, before it has made one, what the
// store behind the feed kept (EDGE_DATA_DIR keeps it across a restart);
// zero when neither knows. A partner waiting for a first walk is told to
// come back after about the remaining part of it (Retry-After).
func (f *Feed) LastWalk() time.Duration {
	if f == nil {
		return 0
	}
	if d := f.took.Load(); d > 0 {
		return time.Duration(d)
	}
	if wt, ok := f.cfg.Shared.(walkTimer); ok {
		return wt.LastWalk()
	}
	return 0
}

// Walked wraps a fleet's PMS walk (fleet.LoaderConfig.Walk): a snapshot
// this instance walked is appended to the shared feed by it; one taken
// from another member's publication only read. Without Walked every
// snapshot counts as walked here. A nil feed: walk itself.
func (f *Feed) Walked(walk func(context.Context) ([]mapping.Property, time.Time, error)) func(context.Context) ([]mapping.Property, time.Time, error) {
	if f == nil {
		return walk
	}
	f.mu.Lock()
	f.ownWalks = true
	f.mu.Unlock()
	return func(ctx context.Context) ([]mapping.Property, time.Time, error) {
		props, at, err := walk(ctx)
		if err == nil {
			f.walked.Store(at.UnixMilli())
		}
		return props, at, err
	}
}

// Next is the feed's position at snap, the cursor of a list answer served
// from it (meta.events.next): a partner who lists, then follows the feed
// from it, misses nothing. The current snapshot's is encoded once.
func (f *Feed) Next(snap *upstream.Snapshot) string {
	if n := f.next.Load(); n != nil && n.snap == snap {
		return n.next
	}
	return string(appendCursor(nil, f.tag, EndOf(snap.LoadedAt.UnixMilli())))
}

// Valid reports whether after reads as a cursor of this feed (its format,
// its mode); whether the feed issued it is AppendPage's check
// (docs/contract.md sections 23 and 25: any other is 422).
func (f *Feed) Valid(after string) bool {
	_, ok := parseCursor(after, f.tag)
	return ok
}

// Page is the meta of an events answer: Next, the cursor to pass as after
// next time, and More, whether more events wait now.
type Page struct {
	Next string
	More bool
}

// AppendPage appends to b, comma-separated, the JSON of up to limit events
// after the cursor after (from the oldest kept when hasAfter is false)
// that v may see, oldest first. Errors: ErrCursorUnknown (not Valid),
// ErrCursorExpired (older than the events kept), ErrCursorUnknown too for a
// position the feed never issued (issued), an *upstream.Error of
// kind Unavailable while the feed cannot be read yet (a fleet member that
// has not read the shared feed).
func (f *Feed) AppendPage(ctx context.Context, b []byte, after string, hasAfter bool, limit int, v Viewer) ([]byte, Page, error) {
	now := f.cfg.Now()
	from, err := f.begin(ctx, after, hasAfter)
	if err != nil {
		return b, Page{}, err
	}
	out, res, err := f.log.page(b, from, hasAfter, limit, v, now)
	if err != nil {
		return b, Page{}, notStarted(err)
	}
	p := Page{Next: res.next, More: res.more}
	if p.Next == "" { // no event examined: where the partner stands
		p.Next = after
		if !hasAfter {
			floor, _ := f.log.last()
			p.Next = string(appendCursor(nil, f.tag, floor))
		}
	}
	return out, p, nil
}

// begin is the position of the cursor after, checked as a read of the
// feed checks it (a page, or Read): ErrCursorUnknown when it is not one of
// this feed or was never issued; a fleet member's copy of the shared feed
// made fresh first. hasAfter false: the zero position, unchecked.
func (f *Feed) begin(ctx context.Context, after string, hasAfter bool) (Pos, error) {
	var from Pos
	if hasAfter {
		var ok bool
		if from, ok = parseCursor(after, f.tag); !ok {
			return Pos{}, ErrCursorUnknown
		}
	}
	if f.cfg.Shared != nil {
		f.freshen(ctx)
	}
	if hasAfter {
		if err := f.issued(ctx, from); err != nil {
			return Pos{}, err
		}
	}
	return from, nil
}

// notStarted turns errNotStarted into the Unavailable partners are told
// to retry after; any other error is returned as it is.
func notStarted(err error) error {
	if errors.Is(err, errNotStarted) {
		return &upstream.Error{Kind: upstream.Unavailable, RetryAfter: time.Second, Err: err}
	}
	return err
}

// errNotStarted: no walk seen yet (single edge), or the shared feed never
// read (fleet).
var errNotStarted = errors.New("events: the feed has not been read yet")

// observe takes snapshot s, returned by the cache's load: a walk of this
// instance is diffed against the previous walk (in memory, or appended to
// the shared feed); another member's is only read.
func (f *Feed) observe(ctx context.Context, s *upstream.Snapshot, took time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	walk := s.LoadedAt.UnixMilli()
	others := false // a new snapshot another member walked
	if f.seen != s {
		f.seen = s
		f.holds.replace(s, f.cfg.Now())
		switch {
		case f.cfg.Shared == nil:
			f.took.Store(int64(max(took, 1)))
			f.record(s, walk, spanOf(ctx))
		case !f.ownWalks || f.walked.Load() == walk:
			f.took.Store(int64(max(took, 1)))
			f.lead(ctx, s, walk, took)
		default:
			f.lastShared.Store(s)
			others = true
		}
		f.next.Store(&snapNext{snap: s, next: string(appendCursor(nil, f.tag, EndOf(walk)))})
	}
	if f.cfg.Shared != nil {
		_ = f.sync(ctx)
		if others {
			f.awaitShared(ctx, walk)
		}
	}
}

// record is a single edge's walk, whose span is sc (zero: none kept): the
// first is the baseline (no events, the feed starts after it); each later
// one appends its changes. A walk not newer than the base (the clock
// stepped back) makes no events: the next one diffs against the same
// base, so nothing is lost.
func (f *Feed) record(s *upstream.Snapshot, walk int64, sc trace.SpanContext) {
	if f.base == nil {
		f.base = &baseline{walk: walk, snap: s}
		f.headWalk.Store(walk)
		f.log.raise(EndOf(walk))
		return
	}
	if walk <= f.base.walk {
		return
	}
	changes := Diff(f.base.snap, s)
	f.base = &baseline{walk: walk, snap: s}
	f.headWalk.Store(walk)
	if len(changes) == 0 {
		return
	}
	bt, cost := newBatch(walk, changes)
	f.log.reserve(len(changes), cost, f.cfg.Now())
	for k, c := range changes {
		bt.add(f.tag, Pos{Walk: walk, Seq: uint32(k)}, c.Type, c.Item.ID, c.Item.JSON)
	}
	bt.span(walk, sc)
	f.log.add(bt.entries(), bt.spans, f.cfg.Now())
	f.metrics.published(changes)
	f.appended(len(changes))
}

// appended tells Config.Appended that n events (none: nothing) were added.
func (f *Feed) appended(n int) {
	if n > 0 && f.cfg.Appended != nil {
		f.cfg.Appended()
	}
}

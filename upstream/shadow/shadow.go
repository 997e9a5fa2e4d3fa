// Package shadow compares a candidate PMS with the live one in the
// background (docs/contract.md section 14): right after the edge's own walk of the live
// PMS, at most once per Interval for each brand and mode, it walks the
// candidate with its own client (retries, breaker) under its own deadline,
// maps each record as the edge does (mapping.MapRaw, pms.Direct's
// options) and compares what partners would see with the live snapshot as
// it walks (pmscheck.Comparer, the definition pmscheck.Compare is built
// on), keeping the differences only. The latest comparison is served on
// the admin listener (Handler) and its differences are metrics.
//
// The candidate never serves a partner: the only contact with the partner
// path is After's hand-over of the live snapshot, a mutex and a
// non-blocking channel send; the walk itself runs in Run's goroutine.
package shadow

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"maps"
	"runtime"
	"sync"
	"time"

	"github.com/partner-edge/partner-edge/upstream/pms"

	"go.opentelemetry.io/otel/metric"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/pmscheck"
)

// Config configures a Shadow.
type Config struct {
	// Candidate configures the candidate's own client: its BaseURL
	// (PMS_CANDIDATE_URL) and Token (PMS_CANDIDATE_TOKEN) with the edge's
	// retries and bounds. Its breaker is its own: a failing candidate
	// never opens the live PMS's circuit. Required.
	Candidate pms.ClientConfig
	// Brand is the deployment's brand (EDGE_BRAND). Required.
	Brand string
	// CodeSource is EDGE_CODE_SOURCE. Empty means none.
	CodeSource mapping.CodeSource
	// Interval is the least time between two candidate walks of one mode:
	// the cache TTL. Zero or negative means cache.DefaultTTL (with caching
	// off every request walks the live PMS; the candidate still waits).
	Interval time.Duration
	// Timeout is the deadline of one candidate walk (EDGE_PMS_WALK_TIMEOUT:
	// a walk's budget, docs/contract.md section 24). Zero means
	// pms.DefaultWalkTimeout. A paced walk's deadline, this one and
	// the client's WalkTimeout, is at least twice what the pace makes a
	// walk to the bound take.
	Timeout time.Duration
	// ReadBytesPerSecond paces the candidate's walk (each page waits for
	// its share before it is decoded), so that it takes a bounded share
	// of the CPU from partners (docs/contract.md section 17). Zero means
	// DefaultReadBytesPerSecond; negative means unpaced. The candidate's
	// bound is Candidate.MaxWalkBytes (PMS_CANDIDATE_MAX_WALK_BYTES).
	ReadBytesPerSecond int64
	// Now is the clock of the Interval. Nil means time.Now.
	Now func() time.Time
	// Logger receives one line per failed candidate walk (warn) and per
	// comparison with differences (info). Nil discards them.
	Logger *slog.Logger
	// Meter creates the partner_edge.shadow.* instruments (see Metrics).
	// Nil means no metrics.
	Meter metric.Meter
}

// DefaultReadBytesPerSecond is Config.ReadBytesPerSecond when zero: a
// candidate of 64 MiB (PMS_CANDIDATE_MAX_WALK_BYTES's default) is walked
// in about 4 s, and its deadline is at least twice that (New): well within
// a walk's budget (EDGE_PMS_WALK_TIMEOUT, 10 min).
const DefaultReadBytesPerSecond = 16 << 20

// Shadow walks and compares the candidate. Build it with New, run its
// goroutine with Run, hook it after each mode's load with After.
type Shadow struct {
	client   *pms.Client
	brand    string
	cs       mapping.CodeSource
	interval time.Duration
	timeout  time.Duration
	zones    *mapping.ZoneCache // time-zone validity, remembered across walks
	now      func() time.Time
	log      *slog.Logger
	metrics  *Metrics

	wake chan struct{} // capacity 1: Run has offers to look at

	mu      sync.Mutex
	pending map[string]*upstream.Snapshot // by mode: the newest live snapshot not yet compared
	started map[string]time.Time          // by mode: when the last candidate walk started
	walks   map[string]int                // by mode: candidate walks so far
	latest  map[string]*Comparison        // by mode
}

// New returns a Shadow for cfg, or an error naming a bad setting.
func New(cfg Config) (*Shadow, error) {
	if cfg.Brand == "" {
		return nil, errors.New("shadow: a brand is required")
	}
	if cfg.ReadBytesPerSecond >= 0 { // negative: unpaced
		cfg.Candidate.ReadBytesPerSecond = cmp.Or(cfg.ReadBytesPerSecond, DefaultReadBytesPerSecond)
	}
	cfg.Timeout = cmp.Or(max(cfg.Timeout, 0), pms.DefaultWalkTimeout)
	if r := cfg.Candidate.ReadBytesPerSecond; r > 0 {
		// A paced walk to its bound takes bound/rate: its deadlines
		// leave room for twice that, so that it ends at its bound (and
		// /shadow says so), not at a deadline made for unpaced walks.
		bound := cmp.Or(cfg.Candidate.MaxWalkBytes, pms.DefaultMaxWalkBytes)
		paced := time.Duration(2 * float64(bound) / float64(r) * float64(time.Second))
		cfg.Timeout = max(cfg.Timeout, paced)
		cfg.Candidate.WalkTimeout = max(cmp.Or(cfg.Candidate.WalkTimeout, pms.DefaultWalkTimeout), paced)
	}
	client, err := pms.NewClient(cfg.Candidate)
	if err != nil {
		return nil, err
	}
	s := &Shadow{client: client, brand: cfg.Brand, cs: cfg.CodeSource, interval: cmp.Or(max(cfg.Interval, 0), cache.DefaultTTL),
		timeout: cfg.Timeout, zones: &mapping.ZoneCache{}, now: cfg.Now, log: cfg.Logger,
		wake:    make(chan struct{}, 1),
		pending: map[string]*upstream.Snapshot{}, started: map[string]time.Time{},
		walks: map[string]int{}, latest: map[string]*Comparison{}}
	if s.now == nil {
		s.now = time.Now
	}
	s.log = cmp.Or(s.log, slog.New(slog.DiscardHandler))
	if s.metrics, err = newMetrics(cfg.Meter); err != nil {
		return nil, err
	}
	return s, nil
}

// After returns load followed by a hand-over of each snapshot it loads to
// the Shadow, for the candidate walk of mode; the snapshot and the error
// are returned unchanged. The hand-over never waits: when a walk of mode
// started less than Interval ago it is a clock read under a mutex.
func (s *Shadow) After(mode string, load cache.Loader) cache.Loader {
	s.metrics.register(mode)
	return func(ctx context.Context) (*upstream.Snapshot, error) {
		snap, err := load(ctx)
		if err == nil && snap != nil {
			s.offer(mode, snap)
		}
		return snap, err
	}
}

// offer keeps snap as mode's next comparison unless a walk of mode started
// less than Interval ago, and wakes Run.
func (s *Shadow) offer(mode string, snap *upstream.Snapshot) {
	s.mu.Lock()
	last, ok := s.started[mode]
	due := !ok || s.now().Sub(last) >= s.interval
	if due {
		s.pending[mode] = snap
	}
	s.mu.Unlock()
	if due {
		select {
		case s.wake <- struct{}{}:
		default: // Run is already woken
		}
	}
}

// Run walks the candidate for every due offer until ctx ends. Run it in
// one goroutine; each walk ends with ctx too.
//
// The walks run at low priority (docs/contract.md section 17: the candidate never
// raises partner p99 by more than 10%): Run keeps its goroutine on one
// thread, which it gives the lowest scheduling priority (Linux), and the
// walk decodes and maps the candidate's records on that thread, paced
// (Config.ReadBytesPerSecond). The thread ends with Run (it is never
// unlocked), so no other goroutine inherits its priority.
func (s *Shadow) Run(ctx context.Context) {
	runtime.LockOSThread()
	if err := lowerPriority(); err != nil {
		s.log.Warn("shadow candidate: cannot lower the walk's priority; pacing alone bounds it", "error", err)
	}
	defer s.client.CloseIdleConnections()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		for mode, snap := s.take(); snap != nil; mode, snap = s.take() {
			s.compare(ctx, mode, snap)
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// take removes one due offer and marks its walk as started; nil when none
// is due.
func (s *Shadow) take() (string, *upstream.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for mode, snap := range s.pending {
		delete(s.pending, mode)
		if last, ok := s.started[mode]; ok && now.Sub(last) < s.interval {
			continue
		}
		s.started[mode] = now
		s.walks[mode]++
		return mode, snap
	}
	return "", nil
}

// compare walks the candidate once and records the comparison with live.
func (s *Shadow) compare(ctx context.Context, mode string, live *upstream.Snapshot) {
	wctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	cr := pmscheck.NewComparer(live.All())
	census := pmscheck.NewCensus(s.cs)
	err := s.walk(wctx, cr, census)
	c := &Comparison{Brand: s.brand, Mode: mode, At: s.now().UTC(), LiveLoadedAt: live.LoadedAt.UTC(),
		MaxWalkBytes: s.client.MaxWalkBytes(), Examples: []Example{}, Drift: []pmscheck.Drift{}}
	s.mu.Lock()
	c.Walks = s.walks[mode]
	s.mu.Unlock()
	switch {
	case err != nil && ctx.Err() != nil:
		return // the process is stopping: no comparison
	case err != nil:
		c.Candidate, c.Error, c.Cause = "failed", upstream.KindOf(err).String(), upstream.Cause(err)
		if errors.Is(err, pms.ErrWalkOverBound) {
			c.Error = ErrorOverBound
		}
		s.log.Warn("shadow candidate walk failed; partners are not affected", "mode", mode, "error", err)
		s.metrics.walk(mode, c.Candidate)
	default:
		diff := cr.Diff()
		c.Candidate = "ok"
		c.Counts = Counts{Added: len(diff.Added), Removed: len(diff.Removed), Changed: len(diff.Changed),
			Rejected: len(diff.Rejected), Live: live.Len(), CandidateProperties: cr.Properties()}
		c.Examples = examples(diff)
		if d := census.Drift(); d != nil {
			c.Drift = d
		}
		s.metrics.walk(mode, c.Candidate)
		s.metrics.differences(mode, c.Counts, c.At)
		if !diff.Empty() {
			s.log.Info("shadow candidate differs from the live PMS", "mode", mode, "added", c.Counts.Added,
				"removed", c.Counts.Removed, "changed", c.Counts.Changed, "rejected", c.Counts.Rejected)
		}
		for _, d := range c.Drift {
			s.log.Info("shadow candidate's records changed shape", "mode", mode, "drift", d.Message)
		}
	}
	s.mu.Lock()
	s.latest[mode] = c
	s.mu.Unlock()
}

// walk walks the candidate with the edge's client and mapping (the options
// pms.Direct maps with) and feeds each record to cr as it arrives,
// and to census (which fields each record carries, to name a drift's cause):
// the walk keeps its differences from the live snapshot only, never the
// candidate's properties (docs/contract.md section 17), and copies the name
// and code only of the records it compares (those the live snapshot has),
// so a large candidate leaves little for the collector to mark or sweep
// while partners are served. The client bounds the bytes the candidate sends (MaxWalkBytes)
// and what cr keeps counts against the same bound: either ends the walk
// with ErrWalkOverBound.
func (s *Shadow) walk(ctx context.Context, cr *pmscheck.Comparer, census *pmscheck.Census) error {
	bound := s.client.MaxWalkBytes()
	mo := mapping.Options{Brand: s.brand, CodeSource: s.cs, Zones: s.zones}
	wants := cr.Wants
	return s.client.WalkHotels(ctx, s.brand, func(raw []byte) error {
		census.Add(raw)
		p, err := mapping.MapRawFor(raw, mo, wants)
		var rj *mapping.Rejection
		switch {
		case err == nil:
			cr.Mapped(p)
		case errors.As(err, &rj):
			cr.Rejected(rj.HotelID, rj.Reason)
		}
		if cr.Kept() > bound {
			return pms.OverBound(bound)
		}
		return nil
	})
}

// Walks returns how many candidate walks of mode have started.
func (s *Shadow) Walks(mode string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.walks[mode]
}

// Latest returns the latest comparison of each mode, by mode.
func (s *Shadow) Latest() map[string]*Comparison {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.latest)
}

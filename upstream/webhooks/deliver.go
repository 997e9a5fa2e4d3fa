package webhooks

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/metric"
)

// Retries are the waits before each attempt after a failed one: a failed
// event is tried again after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h,
// eight attempts in all over about 28 hours; the eighth failed, the
// endpoint is disabled (docs/webhooks.md, "Retries").
var Retries = [...]time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute,
	2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// Defaults of Config.
const (
	DefaultPoll  = time.Second
	DefaultBatch = 100
)

// Config is a Deliverer's.
type Config struct {
	// Store keeps the endpoints and their progress. Required.
	Store Store
	// Source reads the events of each endpoint. Required.
	Source Source
	// Sender makes each attempt. Required (an *HTTPSender).
	Sender Sender
	// Now stamps progress (the next attempt's time, a disable's) and
	// measures the lag; its waits run on the runtime's timers, so a test
	// inside a testing/synctest bubble gives it the bubble's clock
	// (time.Now there). Nil: time.Now.
	Now func() time.Time
	// Poll is how often the Store is scanned for endpoints and an
	// endpoint that is up to date reads the feed again, between Wakes;
	// zero or less: DefaultPoll.
	Poll time.Duration
	// Batch is how many events an endpoint reads at once; zero or less:
	// DefaultBatch.
	Batch int
	// Log gets a warning per endpoint disabled and per failing read of
	// the Store or the Source; nil: discard.
	Log *slog.Logger
	// Meter makes the instruments of metrics.go; nil: none.
	Meter metric.Meter
	// Lease, in a fleet, has one member at a time deliver each endpoint
	// (lease.go); nil: this Deliverer delivers every endpoint (a single
	// edge).
	Lease Lease
	// LeaseTTL is how long a lease lasts unless extended; zero or less:
	// DefaultLeaseTTL. Unused without Lease.
	LeaseTTL time.Duration
}

// Deliverer delivers every enabled endpoint's events, each endpoint on its
// own goroutine (started and stopped as the Store's scan finds endpoints
// enabled, disabled or gone), so a failing endpoint never delays another;
// all of them stop when Run's context ends. Safe for concurrent use.
type Deliverer struct {
	cfg     Config
	metrics *metrics // nil: none
	wake    atomic.Pointer[chan struct{}]

	warnMu sync.Mutex
	warned map[string]*warned // by message
}

// New is a Deliverer of cfg; Run starts it.
func New(cfg Config) (*Deliverer, error) {
	if cfg.Store == nil || cfg.Source == nil || cfg.Sender == nil {
		return nil, errors.New("webhooks: a Deliverer needs a Store, a Source and a Sender")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	d := &Deliverer{cfg: cfg, warned: map[string]*warned{}}
	if cfg.Meter != nil {
		m, err := newMetrics(cfg.Meter)
		if err != nil {
			return nil, err
		}
		d.metrics = m
	}
	ch := make(chan struct{})
	d.wake.Store(&ch)
	return d, nil
}

// Wake has the scan and every endpoint up to date look again now rather
// than at their next Poll: after a walk added events, after an endpoint
// was created or enabled. It never blocks.
func (d *Deliverer) Wake() {
	ch := make(chan struct{})
	close(*d.wake.Swap(&ch))
}

func (d *Deliverer) woken() <-chan struct{} { return *d.wake.Load() }

// running is one endpoint's goroutine.
type running struct {
	stop context.CancelFunc
	done chan struct{}
}

// Run delivers until ctx ends, then stops every endpoint's goroutine and
// returns once they have returned. An attempt under way is abandoned (it
// is made again, after a restart or by another member: at least once).
func (d *Deliverer) Run(ctx context.Context) error {
	defer d.metrics.close()
	workers := map[string]*running{}
	var wg sync.WaitGroup
	defer func() {
		for _, w := range workers {
			w.stop()
		}
		wg.Wait()
	}()
	tick := time.NewTicker(d.cfg.Poll)
	defer tick.Stop()
	for {
		wake := d.woken()
		d.scan(ctx, workers, &wg)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-wake:
		}
	}
}

// scan starts a goroutine for each enabled endpoint without one and stops
// those of endpoints no longer enabled (their own goroutine notices too,
// at its next step).
func (d *Deliverer) scan(ctx context.Context, workers map[string]*running, wg *sync.WaitGroup) {
	eps, err := d.cfg.Store.Endpoints(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.warn(ctx, "webhooks: cannot list endpoints", "", err)
		}
		return
	}
	on := make(map[string]bool, len(eps))
	for _, ep := range eps {
		if ep.Status == StatusEnabled {
			on[ep.ID] = true
		}
	}
	d.metrics.scanned(len(on), len(eps)-len(on))
	for id, w := range workers {
		select {
		case <-w.done:
			delete(workers, id)
			continue
		default:
		}
		if !on[id] {
			w.stop()
			delete(workers, id) // wg waits for it
		}
	}
	for id := range on {
		if workers[id] != nil {
			continue
		}
		wctx, stop := context.WithCancel(ctx)
		w := &running{stop: stop, done: make(chan struct{})}
		workers[id] = w
		wg.Go(func() {
			defer close(w.done)
			defer stop()
			d.deliver(wctx, id)
		})
	}
}

// deliver delivers endpoint id's events until it is disabled or deleted,
// or ctx ends: the next undelivered event when its NextAttempt comes, then
// the ones after it, in order; a failure stops the run until the next
// attempt's time.
func (d *Deliverer) deliver(ctx context.Context, id string) {
	h := &holding{id: id}
	defer d.release(ctx, h)
	var idle *Endpoint // up to date as last read, or having delivered all it read
	for ctx.Err() == nil {
		wake := d.woken()
		if !d.hold(ctx, h) { // another member delivers it
			idle = nil
			d.sleep(ctx, d.cfg.LeaseTTL/3, nil)
			continue
		}
		// An endpoint up to date polls the feed alone, not the Store as
		// well (with a hundred endpoints, a hundred reads and decodings a
		// second; a fleet's, Redis round trips): nothing else moves an
		// enabled endpoint's progress while this goroutine delivers it
		// (under its lease, in a fleet), and one deleted meanwhile is
		// stopped by the scan. Once the feed holds events, the endpoint is
		// read again before anything is sent, and what was read ahead is
		// sent only if its position is still theirs.
		var ahead []Event
		aheadOf := ""
		if idle != nil {
			evs, err := d.cfg.Source.Read(ctx, idle, idle.After, d.cfg.Batch)
			if err == nil && len(evs) == 0 {
				d.sleep(ctx, d.leaseWait(d.cfg.Poll), wake)
				continue
			}
			if err == nil {
				ahead, aheadOf = evs, idle.After
			}
			idle = nil
		}
		ep, err := d.cfg.Store.Endpoint(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound), err == nil && ep.Status != StatusEnabled:
			return
		case err != nil:
			d.warn(ctx, "webhooks: cannot read an endpoint", id, err)
			d.sleep(ctx, d.leaseWait(d.cfg.Poll), nil)
			continue
		}
		if w := ep.NextAttempt.Sub(d.cfg.Now()); w > 0 {
			d.sleep(ctx, d.leaseWait(w), nil) // a Wake does not bring a retry forward
			continue
		}
		evs, err := ahead, error(nil)
		if len(ahead) == 0 || aheadOf != ep.After {
			evs, err = d.cfg.Source.Read(ctx, &ep, ep.After, d.cfg.Batch)
		}
		switch {
		case errors.Is(err, ErrExpired):
			d.disable(ctx, &ep, EventsExpired, string(EventsExpired), ep.Failures)
			return
		case errors.Is(err, ErrPaused):
		case err != nil:
			d.warn(ctx, "webhooks: cannot read the events of an endpoint", id, err)
		}
		if err != nil || len(evs) == 0 {
			if err == nil {
				idle = &ep
			}
			d.sleep(ctx, d.leaseWait(d.cfg.Poll), wake)
			continue
		}
		all := true
		for _, ev := range evs {
			if !d.hold(ctx, h) || !d.attempt(ctx, &ep, ev) {
				all = false
				break
			}
		}
		if all {
			idle = &ep // its progress as this goroutine recorded it
		}
	}
}

// attempt makes one attempt at ev, the event after ep's progress, and
// records what follows: delivered, the next attempt's time, or the
// endpoint disabled. It reports whether delivery goes on to the next event.
func (d *Deliverer) attempt(ctx context.Context, ep *Endpoint, ev Event) bool {
	res := d.cfg.Sender.Send(ctx, ep, ev, ep.Failures+1)
	if res.Outcome == Canceled || ctx.Err() != nil {
		return false
	}
	d.metrics.attempt(res)
	now := d.cfg.Now()
	if res.Outcome == Delivered {
		d.metrics.delivered(ev, now)
		next := Progress{After: ev.ID}
		if err := d.cfg.Store.SetProgress(ctx, ep.ID, ep.After, next); err != nil {
			d.storeFailed(ctx, "webhooks: cannot record a delivery", ep.ID, err)
			return false // read again: the event may be sent once more
		}
		ep.Progress = next
		return true
	}
	if ep.Failures >= len(Retries) {
		d.disable(ctx, ep, res.Outcome, res.Reason(), ep.Failures+1)
		return false
	}
	next := Progress{After: ep.After, Failures: ep.Failures + 1, NextAttempt: now.Add(Retries[ep.Failures])}
	if err := d.cfg.Store.SetProgress(ctx, ep.ID, ep.After, next); err != nil {
		d.storeFailed(ctx, "webhooks: cannot record a failed attempt", ep.ID, err)
	}
	return false
}

// disable disables ep for reason (o its class) after attempts failed
// attempts at its next event, with one log line.
func (d *Deliverer) disable(ctx context.Context, ep *Endpoint, o Outcome, reason string, attempts int) {
	if err := d.cfg.Store.Disable(ctx, ep.ID, ep.After, reason, d.cfg.Now()); err != nil {
		d.storeFailed(ctx, "webhooks: cannot disable an endpoint", ep.ID, err)
		return
	}
	d.metrics.disable(o)
	host := ""
	if u, err := url.Parse(ep.URL); err == nil {
		host = u.Host
	}
	d.cfg.Log.Warn("webhooks: endpoint disabled", "endpoint", ep.ID, "key", ep.KeyID, "host", host,
		"reason", reason, "attempts", attempts, "after", ep.After)
}

// storeFailed logs a write of the Store that failed and, unless the
// endpoint moved under it (ErrConflict, ErrNotFound: read it again at
// once), waits a Poll: a Store that takes no writes must not have the
// same event sent again and again, as fast as the receiver answers.
func (d *Deliverer) storeFailed(ctx context.Context, msg, id string, err error) {
	d.warn(ctx, msg, id, err)
	if !errors.Is(err, ErrConflict) && !errors.Is(err, ErrNotFound) {
		d.sleep(ctx, d.leaseWait(d.cfg.Poll), nil)
	}
}

// warnEvery bounds the lines of one cause: a Store or Source that fails
// would otherwise log once per endpoint per Poll.
const warnEvery = time.Minute

// warned is one cause's last line and the lines left out since.
type warned struct {
	at      time.Time
	skipped int
}

// warn logs a failing read or write of the Store or the Source, unless
// delivery is stopping or it is a lost race (ErrConflict): at most one line
// a minute per message, with the count of those left out.
func (d *Deliverer) warn(ctx context.Context, msg, id string, err error) {
	if ctx.Err() != nil || errors.Is(err, ErrConflict) {
		return
	}
	if errors.Is(err, ErrStoreUnavailable) {
		d.cfg.Log.Debug(msg, "endpoint", id, "error", err)
		return
	}
	now := d.cfg.Now()
	d.warnMu.Lock()
	w := d.warned[msg] // msg is one of this file's constants: the map stays small
	if w == nil {
		w = &warned{}
		d.warned[msg] = w
	}
	if !w.at.IsZero() && now.Sub(w.at) < warnEvery {
		w.skipped++
		d.warnMu.Unlock()
		return
	}
	skipped := w.skipped
	w.at, w.skipped = now, 0
	d.warnMu.Unlock()
	d.cfg.Log.Warn(msg, "endpoint", id, "error", err, "suppressed", skipped)
}

// sleep waits for dur, wake (nil: none) or the end of ctx.
func (d *Deliverer) sleep(ctx context.Context, dur time.Duration, wake <-chan struct{}) {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-wake:
	}
}

package observability

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// LogEvery is how often a repeated log line may be written, per cause, at
// most (docs/operations.md, "What to watch"): a line that something outside the
// edge can repeat (a PMS's answers, a stray answer, a partner's requests,
// what Redis holds) is written at most once a minute per cause, and the
// next one says how many were left out meanwhile.
const LogEvery = time.Minute

// throttleCauses bounds the causes a Throttle tells apart: the causes are
// the edge's own words (a message, a reason), never what a peer sent, but
// a bound keeps that a promise of the type rather than of each caller.
const throttleCauses = 64

// throttleOther is the cause every cause past throttleCauses shares.
const throttleOther = "other"

// Throttle rate-limits repeated log lines by cause: Allow says whether
// the line of a cause may be written now and how many of that cause were
// left out since the last one written. The zero value allows a line per
// cause every LogEvery by the wall clock; it is safe for concurrent use.
type Throttle struct {
	// Every is the least time between two lines of one cause; 0: LogEvery.
	Every time.Duration
	// Now is the clock; nil: time.Now.
	Now func() time.Time

	mu     sync.Mutex
	causes map[string]*throttled
}

type throttled struct {
	last time.Time // when a line of the cause was last written
	left int       // lines left out since
}

// Allow reports whether a line of cause may be written now (ok) and, if
// so, how many lines of the cause were left out since the last one
// (suppressed), which the line should carry.
func (t *Throttle) Allow(cause string) (suppressed int, ok bool) {
	now := time.Now()
	if t.Now != nil {
		now = t.Now()
	}
	every := t.Every
	if every <= 0 {
		every = LogEvery
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.causes == nil {
		t.causes = make(map[string]*throttled)
	}
	c, seen := t.causes[cause]
	if !seen {
		if len(t.causes) >= throttleCauses {
			cause = throttleOther
			c, seen = t.causes[cause]
		}
		if !seen {
			t.causes[cause] = &throttled{last: now}
			return 0, true
		}
	}
	if d := now.Sub(c.last); d < every && d >= 0 {
		c.left++
		return 0, false
	}
	suppressed, c.last, c.left = c.left, now, 0
	return suppressed, true
}

// ThrottleWarnings returns a logger writing to log's handler whose lines
// at WARN and above are paced by message: at most one per LogEvery per
// message, the next carrying "suppressed" (those left out) and
// "repeats_every". For a part whose warnings something outside the edge
// repeats (an OAuth issuer that keeps failing), wired where it is built;
// loggers derived from it (With) share its pace.
func ThrottleWarnings(log *slog.Logger, now func() time.Time) *slog.Logger {
	return slog.New(&throttledHandler{Handler: log.Handler(), t: &Throttle{Now: now}})
}

type throttledHandler struct {
	slog.Handler
	t *Throttle
}

func (h *throttledHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.Handler.Handle(ctx, r)
	}
	suppressed, ok := h.t.Allow(r.Message)
	if !ok {
		return nil
	}
	if suppressed > 0 {
		r.AddAttrs(slog.Int("suppressed", suppressed))
	}
	r.AddAttrs(slog.String("repeats_every", LogEvery.String()))
	return h.Handler.Handle(ctx, r)
}

func (h *throttledHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &throttledHandler{Handler: h.Handler.WithAttrs(as), t: h.t}
}

func (h *throttledHandler) WithGroup(name string) slog.Handler {
	return &throttledHandler{Handler: h.Handler.WithGroup(name), t: h.t}
}

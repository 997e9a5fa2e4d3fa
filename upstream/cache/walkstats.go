package cache

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// Walks are visible (docs/contract.md section 24; docs/observability.md,
// "Walks"): each load of the snapshot counts its pages, records and
// rejections (upstream.WalkStats), and when it ends the cache puts them
// on the walk's span, in a log line and in the walk metrics; a walk that
// the PMS refuses (the token, the address) is an error line naming the
// setting to fix.

// walkKindKey carries a refresh's walk kind from refresh, which starts
// its span, to loadAndStore.
type walkKindKey struct{}

// walkClock is when the walk under way started and how long the last
// successful one took: the Retry-After of a caller that leaves before the
// walk ends (leftEarly, await).
type walkClock struct {
	started atomic.Int64 // Config.Now, unix nanoseconds; 0: no walk under way
	last    atomic.Int64 // duration of the last successful walk; 0: none yet
	failed  atomic.Int64 // duration of the last failed walk; 0: none
}

// begin marks a walk started at now.
func (w *walkClock) begin(now time.Time) time.Time {
	w.started.Store(now.UnixNano())
	return now
}

// end marks the walk begun at began ended, taking d; ok: it succeeded.
func (w *walkClock) end(began time.Time, d time.Duration, ok bool) {
	if ok {
		w.last.Store(int64(max(d, 1)))
	} else {
		w.failed.Store(int64(max(d, 1)))
	}
	w.started.CompareAndSwap(began.UnixNano(), 0)
}

// expected is how long a walk is expected to take: the last successful
// walk's length in this process, else hint's (a length kept elsewhere:
// Config.LastWalk), else 0 (unknown).
func (w *walkClock) expected(hint func() time.Duration) time.Duration {
	if last := time.Duration(w.last.Load()); last > 0 {
		return last
	}
	if hint != nil {
		return max(hint(), 0)
	}
	return 0
}

// retryAfter is the Retry-After for a caller leaving at now while a walk
// goes on (docs/contract.md section 24): what the expected length leaves
// of this walk or, for a first-ever walk (no length known), the time it
// has run so far; one second with no walk under way; within 1 s and 60 s.
func (w *walkClock) retryAfter(now time.Time, hint func() time.Duration) time.Duration {
	ra := time.Second
	if started := w.started.Load(); started != 0 {
		ran := now.Sub(time.Unix(0, started))
		ra = ran
		if exp := w.expected(hint); exp > 0 {
			ra = exp - ran
		}
	}
	return clampRetryAfter(ra)
}

// clampRetryAfter bounds a Retry-After to 1 s .. 60 s.
func clampRetryAfter(d time.Duration) time.Duration { return min(max(d, time.Second), time.Minute) }

// RefusalLogEvery is the least time between two error lines of a PMS that
// refuses the edge (docs/contract.md section 22: at most once a minute
// while it lasts).
const RefusalLogEvery = time.Minute

// walked accounts for one load of the snapshot of kind, begun at began,
// that counted into st and ended with err: the walk's span gets st's
// summary, the metrics and the log a line. A load that walked nothing
// and succeeded took a fleet's publication: no PMS walk to tell.
func (c *Cache) walked(ctx context.Context, kind string, st *upstream.WalkStats, began time.Time, err error) {
	d := c.cfg.Now().Sub(began)
	c.walks.end(began, d, err == nil)
	pages := st.Pages()
	walkedPMS := pages > 0 || err != nil
	// The walk's duration is the PMS walk's alone: a fleet member's wait
	// for another's lease is measured apart (docs/contract.md section 24).
	if wt := st.WalkTime(); wt > 0 {
		d = wt
	}
	wait, waited := st.LeaseWait()
	if span := trace.SpanFromContext(ctx); walkedPMS && span.IsRecording() {
		span.SetAttributes(st.Summary()...)
	}
	if c.cfg.Metrics != nil {
		if walkedPMS {
			c.cfg.Metrics.Walk(ctx, pages, d, err == nil)
		}
		if waited {
			c.cfg.Metrics.LeaseWait(ctx, wait)
		}
	}
	log := c.cfg.Logger
	attrs := append([]any{"snapshot", c.cfg.Key, "kind", kind, "pages", pages, "records", st.Records(),
		"rejected", st.Rejected(), "duration", d}, st.RejectionAttrs()...)
	if waited {
		attrs = append(attrs, "lease_wait", wait)
	}
	if id := upstream.CallerIDsFrom(ctx).RequestID; id != "" {
		attrs = append(attrs, "request_id", id) // the X-Request-Id its PMS requests carried
	}
	switch {
	case err != nil:
		c.refused(ctx, err)
		msg := "pms walk failed; the held snapshot keeps serving"
		if c.cur.Load() == nil {
			msg = "pms walk failed; no snapshot to serve yet"
		}
		kind := upstream.KindOf(err).String()
		if suppressed, ok := c.walkFails.Allow(kind); ok { // walks are retried: a line a minute per kind
			log.WarnContext(ctx, msg, append(attrs, "error_kind", kind, "error", err,
				"suppressed", suppressed, "repeats_every", observability.LogEvery.String())...)
		}
	case !walkedPMS:
		log.DebugContext(ctx, "snapshot taken from the fleet's publication", "snapshot", c.cfg.Key, "kind", kind,
			"lease_wait", wait)
	default:
		log.InfoContext(ctx, "pms walk finished", attrs...)
	}
}

// refused logs, at most once per RefusalLogEvery, a walk failure that is
// the PMS refusing the edge: its credentials (401, 403) or no connection
// at all. The line names the setting to fix and the failure's class,
// never what the PMS sent (docs/contract.md section 22).
func (c *Cache) refused(ctx context.Context, err error) {
	class, detail := upstream.RefusalOf(err)
	if class == "" {
		return
	}
	now := c.cfg.Now().UnixNano()
	last := c.refusedAt.Load()
	if last != 0 && time.Duration(now-last) < RefusalLogEvery || !c.refusedAt.CompareAndSwap(last, now) {
		return
	}
	setting, what := c.cfg.URLSetting, "the PMS address"
	msg := "the PMS cannot be reached: check %s"
	if class == upstream.RefusedCredentials {
		setting, what = c.cfg.TokenSetting, "the PMS token"
		msg = "the PMS refuses the edge's credentials: check %s"
	}
	if setting == "" {
		setting = what
	}
	c.cfg.Logger.Log(ctx, slog.LevelError, fmt.Sprintf(msg, setting), "snapshot", c.cfg.Key, "class", string(class), "cause", detail,
		"setting", setting, "repeats_every", RefusalLogEvery.String())
}

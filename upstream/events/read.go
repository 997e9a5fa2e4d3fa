package events

import (
	"context"
	"sort"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Event is one event of the feed on its own, for a reader that handles
// events one by one (webhooks' delivery, docs/webhooks.md) rather than
// pages of them.
type Event struct {
	// ID is the event's id, a cursor of the feed: reading after it goes on
	// with the next event.
	ID string
	// OccurredAt is the event's occurredAt: the time of the walk that saw
	// the change.
	OccurredAt time.Time
	// JSON is the Event object exactly as GET /v1/events serves it, the
	// very bytes of a page (encoded once, when the event was added). It
	// is shared with the feed: never modified.
	JSON []byte
	// Walk is the span of the walk that made the event, when the walk was
	// kept (span.go); zero: none. A webhook attempt at the event links to
	// it. It is never in JSON.
	Walk trace.SpanContext
}

// Read returns up to limit events after the cursor after (from the oldest
// kept when hasAfter is false) that v may see, in feed order, each as a
// page of GET /v1/events holds it: the same selection by v, the same
// bytes. next is the id of the last event it examined ("" when none):
// reading after next goes on past events v may not see. It examines at
// most as many events as a page does, so it may return none with next
// set while more wait: read again after next. Errors are AppendPage's.
func (f *Feed) Read(ctx context.Context, after string, hasAfter bool, limit int, v Viewer) (evs []Event, next string, err error) {
	now := f.cfg.Now()
	from, err := f.begin(ctx, after, hasAfter)
	if err != nil {
		return nil, "", err
	}
	evs, next, err = f.log.read(from, hasAfter, limit, v, now)
	return evs, next, notStarted(err)
}

// read is Read on the log: a page's start and selection, each event
// handed out on its own.
func (l *eventLog) read(after Pos, from bool, limit int, v Viewer, now time.Time) ([]Event, string, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	i, err := l.startLocked(after, from, now)
	if err != nil {
		return nil, "", err
	}
	es := l.entries
	all := v.AllProperties()
	var out []Event
	last := -1
	k := 0 // where the next event's walk's span is looked for in l.spans
	if i < len(es) {
		k = sort.Search(len(l.spans), func(j int) bool { return l.spans[j].Walk >= es[i].pos.Walk })
	}
	for scanned := 0; i < len(es) && len(out) < limit && scanned < maxScan; i++ {
		scanned++
		last = i
		if !all && !v.CanSee(es[i].prop) {
			continue
		}
		e := &es[i]
		var sc trace.SpanContext
		sc, k = spanAt(l.spans, k, e.pos.Walk)
		out = append(out, Event{ID: e.id, OccurredAt: time.UnixMilli(e.pos.Walk).UTC(), JSON: e.buf[e.from:e.to:e.to], Walk: sc})
	}
	if last < 0 {
		return out, "", nil
	}
	return out, es[last].id, nil
}

// Position is the feed's position now: the cursor after every event it
// holds and after the last walk it served (what a list answer of the
// current snapshot names, meta.events.next), the later of the two. Reading
// after it returns the changes that come after this moment only: where a
// webhook endpoint created now starts (docs/webhooks.md). An
// *upstream.Error of kind Unavailable before the feed has started.
func (f *Feed) Position(ctx context.Context) (string, error) {
	if f.cfg.Shared != nil {
		f.freshen(ctx)
	}
	last, started := f.log.last()
	if !started {
		return "", notStarted(errNotStarted)
	}
	if n := f.next.Load(); n != nil {
		if p, ok := parseCursor(n.next, f.tag); ok && p.Compare(last) >= 0 {
			return n.next, nil
		}
	}
	return string(appendCursor(nil, f.tag, last)), nil
}

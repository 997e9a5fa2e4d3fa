package events

import (
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/trace"
)

// entry is one event as served: its position, the property it is about
// (for the key's grants), its id and its Event object's JSON, encoded once:
// buf[from:to], buf being the JSON of the events added with it, joined by
// commas, so that a page of a key that sees every property copies each
// run of them at once.
type entry struct {
	pos      Pos
	prop     string
	id       string
	buf      []byte
	from, to int
}

// batch encodes events added together into one buffer, commas between,
// and the spans of their walks.
type batch struct {
	buf   []byte
	es    []entry
	spans []WalkSpan // ascending by walk, one per walk at most
}

// span records sc (zero: nothing) as the span of walk, whose events the
// batch adds.
func (b *batch) span(walk int64, sc trace.SpanContext) {
	if !sc.IsValid() {
		return
	}
	if n := len(b.spans); n > 0 && b.spans[n-1].Walk >= walk {
		return
	}
	b.spans = append(b.spans, WalkSpan{Walk: walk, Span: sc})
}

// add encodes the event t at p of the feed tagged tag about prop (data:
// its JSON).
func (b *batch) add(tag byte, p Pos, t Type, prop string, data []byte) {
	if len(b.buf) > 0 {
		b.buf = append(b.buf, ',')
	}
	id := string(appendCursor(make([]byte, 0, cursorLen), tag, p))
	from := len(b.buf)
	b.buf = appendEvent(b.buf, id, t, p.Walk, data)
	b.es = append(b.es, entry{pos: p, prop: prop, id: id, from: from, to: len(b.buf)})
}

// newBatch is a batch for the events of changes at walk, its buffer sized
// for them, and what they will cost in the log (entry.cost), to reserve
// before encoding them.
func newBatch(walk int64, changes []Change) (batch, int64) {
	// Every event of a walk has the same envelope but its type: its id
	// (cursorLen), occurredAt (the walk's) and data vary only in data.
	head := len(appendEvent(nil, strings.Repeat("0", cursorLen), 0, walk, nil))
	size, cost := 0, int64(0)
	for _, c := range changes {
		n := head - len(Type(0).String()) + len(c.Type.String()) + len(c.Item.JSON)
		size += n + 1
		cost += int64(cursorLen+len(c.Item.ID)+n+1) + entryOverhead
	}
	return batch{buf: make([]byte, 0, size), es: make([]entry, 0, len(changes))}, cost
}

// entries are the batch's entries, each pointing into its buffer.
func (b *batch) entries() []entry {
	for i := range b.es {
		b.es[i].buf = b.buf
	}
	return b.es
}

// entryOverhead is what an entry costs in memory beside its bytes (id,
// property id, JSON and comma): the struct itself in the log's slice, and
// as much again for the slack of a slice that grows by appending and
// drops its head by reslicing. Measured in TestLogBytesMatchTheHeap.
const entryOverhead = 2 * int64(unsafe.Sizeof(entry{}))

// cost is e's share of the memory the log holds (eventLog.maxBytes).
func (e *entry) cost() int64 {
	return int64(len(e.id)+len(e.prop)+e.to-e.from+1) + entryOverhead
}

// eventLog is the events a Feed serves, oldest first: all of them on a
// single edge, the mirror of the shared feed in a fleet. Bounded by
// retention, max and maxBytes (trimmed as events are added; an event past
// retention is never served, trimmed or not). Safe for concurrent use.
type eventLog struct {
	retention time.Duration
	max       int
	maxBytes  int64 // bound on the sum of the entries' cost

	mu      sync.RWMutex
	entries []entry
	bytes   int64 // the sum of the entries' cost
	// spans are the spans of the walks entries holds events of (those
	// kept: span.go), ascending by walk: one per walk, not per event, and
	// not counted in bytes (72 bytes a walk).
	spans []WalkSpan
	// floor: a cursor before it has lost events (a trimmed event, or the
	// feed's start), so it is 410; started: the floor is known (a first
	// walk was seen, or the shared feed was read).
	floor   Pos
	started bool
}

// raise lifts the floor to p and marks the log started.
func (l *eventLog) raise(p Pos) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.raiseLocked(p)
}

func (l *eventLog) raiseLocked(p Pos) {
	if !l.started || l.floor.Compare(p) < 0 {
		l.floor = p
	}
	l.started = true
}

// add appends es (positions after every entry held) and the spans of
// their walks, then trims by retention (against now), max and maxBytes,
// the oldest first, raising the floor past what it drops.
func (l *eventLog) add(es []entry, spans []WalkSpan, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, es...)
	for _, sp := range spans {
		if n := len(l.spans); n == 0 || l.spans[n-1].Walk < sp.Walk {
			l.spans = append(l.spans, sp)
		}
	}
	for i := range es {
		l.bytes += es[i].cost()
	}
	l.trimLocked(0, 0, now)
}

// reserve makes room for n events that will cost about cost, before they
// are encoded: the oldest events that adding them would drop go first, so
// that a walk's events and the ones they replace are never in memory
// together (at the byte bound a walk of the brand's every property is a
// third of it; docs/operations.md, "Sizing the feed"). add still enforces
// the bounds on what it adds.
func (l *eventLog) reserve(n int, cost int64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trimLocked(n, cost, now)
}

// trimLocked drops the oldest entries past retention, and while the log
// with n more events costing cost more would be over max or maxBytes.
func (l *eventLog) trimLocked(n int, cost int64, now time.Time) {
	cut := now.Add(-l.retention).UnixMilli()
	k := sort.Search(len(l.entries), func(i int) bool { return l.entries[i].pos.Walk >= cut })
	if over := len(l.entries) + n - k - l.max; over > 0 {
		k = min(k+over, len(l.entries))
	}
	dropped := int64(0)
	for i := range k {
		dropped += l.entries[i].cost()
	}
	for ; k < len(l.entries) && l.maxBytes > 0 && l.bytes+cost-dropped > l.maxBytes; k++ {
		dropped += l.entries[k].cost()
	}
	if k > 0 {
		l.raiseLocked(l.entries[k-1].pos)
		clear(l.entries[:k]) // the dropped events' JSON is garbage now
		l.entries = l.entries[k:]
		l.bytes -= dropped
		l.compactHead()
	}
	l.dropSpans()
}

// dropSpans drops the spans of walks no entry is left of (the oldest).
func (l *eventLog) dropSpans() {
	k := len(l.spans)
	if len(l.entries) > 0 {
		first := l.entries[0].pos.Walk
		k = sort.Search(len(l.spans), func(i int) bool { return l.spans[i].Walk >= first })
	}
	if k > 0 {
		l.spans = l.spans[k:]
	}
}

// spanAt is the span of walk among spans from index k on (ascending, as
// the entries), and the index to look from for a later walk.
func spanAt(spans []WalkSpan, k int, walk int64) (trace.SpanContext, int) {
	for k < len(spans) && spans[k].Walk < walk {
		k++
	}
	if k < len(spans) && spans[k].Walk == walk {
		return spans[k].Span, k
	}
	return trace.SpanContext{}, k
}

// compactHead moves the events left of a walk whose oldest ones were
// dropped into a buffer of their own, when the dropped ones took a
// quarter of it or more: a walk's events share one buffer, which would
// otherwise stay whole until its last event goes, so that at
// EDGE_EVENTS_MAX_BYTES the heap held about 1.4 times what the bound
// counts (TestLogBytesMatchTheHeap). Buffers are never written once
// shared: a reader holding the old one keeps reading it.
func (l *eventLog) compactHead() {
	if len(l.entries) == 0 {
		return
	}
	head := &l.entries[0]
	off := head.from
	if off == 0 || off < len(head.buf)/4 {
		return
	}
	j := 1
	for j < len(l.entries) && len(l.entries[j].buf) > 0 && &l.entries[j].buf[0] == &head.buf[0] {
		j++
	}
	end := l.entries[j-1].to
	nb := make([]byte, end-off)
	copy(nb, head.buf[off:end])
	for i := range j {
		e := &l.entries[i]
		e.buf, e.from, e.to = nb, e.from-off, e.to-off
	}
}

// isStarted reports whether the floor is known.
func (l *eventLog) isStarted() bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.started
}

// last is the position of the newest entry held, or the floor.
func (l *eventLog) last() (Pos, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if n := len(l.entries); n > 0 {
		return l.entries[n-1].pos, true
	}
	return l.floor, l.started
}

// held is the memory the log's entries cost (maxBytes bounds it).
func (l *eventLog) held() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.bytes
}

// stats are the log's length and the time of its oldest event (zero:
// none), for the metrics.
func (l *eventLog) stats() (int, int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if len(l.entries) == 0 {
		return 0, 0
	}
	return len(l.entries), l.entries[0].pos.Walk
}

// adjacent reports whether b follows a in the same buffer, a comma between.
func adjacent(a, b *entry) bool {
	return b.from == a.to+1 && len(a.buf) > 0 && len(b.buf) > 0 && &a.buf[0] == &b.buf[0]
}

// appendRun appends the JSON of run, adjacent entries of one buffer (their
// commas included), after a comma when comma says so.
func appendRun(b []byte, run []entry, comma bool) []byte {
	if comma {
		b = append(b, ',')
	}
	return append(b, run[0].buf[run[0].from:run[len(run)-1].to]...)
}

// Viewer is what a page needs of the partner's key: its property grants.
// *keys.Key is one.
type Viewer interface {
	AllProperties() bool
	CanSee(id string) bool
}

// maxScan bounds the events one page looks at for a key granted some
// properties: a page of a key that sees few of them ends after this many
// (hasMore, its next past them), so a request costs at most that much
// whatever the feed holds.
const maxScan = 10000

// pageResult is a page's meta: next is the cursor to pass as after (the
// last event examined; "" when none was: the caller's after, or the floor).
type pageResult struct {
	next string
	more bool
}

// page appends to b, comma-separated, the JSON of up to limit events after
// after (from the oldest kept when !from) that v may see. It fails with
// ErrCursorExpired when after is before the floor (or before an event past
// retention), and with errNotStarted before the floor is known.
func (l *eventLog) page(b []byte, after Pos, from bool, limit int, v Viewer, now time.Time) ([]byte, pageResult, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	es := l.entries
	i, err := l.startLocked(after, from, now)
	if err != nil {
		return b, pageResult{}, err
	}
	all := v.AllProperties()
	var res pageResult
	last := -1 // the last event the page covers: next names it
	n, scanned := 0, 0
	run, end, wrote := -1, -1, false // a run [run, end] of adjacent entries not copied yet
	for ; i < len(es) && n < limit && scanned < maxScan; i++ {
		scanned++
		if !all && !v.CanSee(es[i].prop) {
			last = i
			continue
		}
		if run >= 0 && (end != i-1 || !adjacent(&es[end], &es[i])) {
			b, wrote, run = appendRun(b, es[run:end+1], wrote), true, -1
		}
		if run < 0 {
			run = i
		}
		end, n, last = i, n+1, i
	}
	if run >= 0 {
		b = appendRun(b, es[run:end+1], wrote)
	}
	switch {
	case i == len(es): // everything examined
	case all || scanned >= maxScan:
		res.more = true
	default: // a full page of a key granted some properties: is one more ahead?
		res.more = true
		for j := i; j < len(es); j++ {
			if scanned++; scanned > maxScan || v.CanSee(es[j].prop) {
				break
			}
			if j == len(es)-1 { // none: the page covers the rest
				res.more, last = false, j
			}
		}
	}
	if last >= 0 {
		res.next = es[last].id
	}
	return b, res, nil
}

// startLocked is the index of the first entry after after (from the oldest
// kept when !from), under l.mu: ErrCursorExpired when after is before the
// floor (or before an event past retention), errNotStarted before the
// floor is known. A page (page) and a reader of single events (read) start
// alike.
func (l *eventLog) startLocked(after Pos, from bool, now time.Time) (int, error) {
	if !l.started {
		return 0, errNotStarted
	}
	es := l.entries
	cut := now.Add(-l.retention).UnixMilli()
	kept := sort.Search(len(es), func(i int) bool { return es[i].pos.Walk >= cut })
	floor := l.floor
	if kept > 0 && floor.Compare(es[kept-1].pos) < 0 {
		floor = es[kept-1].pos // past retention, not trimmed yet: gone all the same
	}
	// Without after, the oldest event kept: past retention and above the
	// floor (a shared feed that started again raises the floor over
	// events this copy still holds).
	i := max(kept, sort.Search(len(es), func(i int) bool { return es[i].pos.Compare(floor) > 0 }))
	if from {
		if after.Compare(floor) < 0 {
			return 0, ErrCursorExpired
		}
		i = max(i, sort.Search(len(es), func(i int) bool { return es[i].pos.Compare(after) > 0 }))
	}
	return i, nil
}

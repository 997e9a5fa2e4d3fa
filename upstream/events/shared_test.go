package events

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
)

// memShared is Shared in memory, as redisevents keeps it in Redis.
type memShared struct {
	mu      sync.Mutex
	walk    int64
	floor   Pos
	base    *upstream.Snapshot
	events  []Stored
	appends int
	down    bool
	// lost: the next Append is applied but reported as failed (the
	// client's deadline passed while Redis ran it).
	lost      bool
	baseReads int    // calls of Base
	forged    Forged // what each read reports
	spans     map[int64]trace.SpanContext
}

var errDown = errors.New("shared feed down")

func (m *memShared) Append(_ context.Context, w Walk) (Forged, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return Forged{}, errDown
	}
	if w.Prev != m.walk || w.At <= m.walk {
		return Forged{}, ErrConflict
	}
	if m.walk == 0 {
		m.floor = EndOf(w.At)
	}
	for i, c := range w.Changes {
		m.events = append(m.events, Stored{Pos{w.At, uint32(i)}, c.Type, c.Item.ID, c.Item.JSON})
	}
	if len(w.Changes) > 0 && w.Span.IsValid() {
		if m.spans == nil {
			m.spans = map[int64]trace.SpanContext{}
		}
		m.spans[w.At] = w.Span
	}
	m.walk, m.base = w.At, w.Snapshot
	m.appends++
	if m.lost {
		m.lost = false
		return Forged{}, errDown
	}
	return Forged{}, nil
}

func (m *memShared) Base(_ context.Context, have int64) (int64, *upstream.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.baseReads++
	if m.down {
		return 0, nil, errDown
	}
	if m.walk == have {
		return m.walk, nil, nil
	}
	return m.walk, m.base, nil
}

func (m *memShared) Read(_ context.Context, after Pos, n int) (Batch, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return Batch{}, errDown
	}
	if m.forged.State { // position fields refused, as redisevents refuses them: no feed read
		return Batch{Forged: m.forged}, nil
	}
	b := Batch{Floor: m.floor, Walk: m.walk, Forged: m.forged}
	for _, e := range m.events {
		if e.Pos.Compare(after) > 0 && len(b.Events) < n {
			b.Events, b.Through = append(b.Events, e), e.Pos
			if sc, ok := m.spans[e.Pos.Walk]; ok && (len(b.Spans) == 0 || b.Spans[len(b.Spans)-1].Walk != e.Pos.Walk) {
				b.Spans = append(b.Spans, WalkSpan{Walk: e.Pos.Walk, Span: sc})
			}
		}
	}
	b.Full = len(b.Events) == n
	return b, nil
}

// member is one fleet member's feed with its walk: walking sets the
// walked time as fleet.Loader's Walk would, then the load returns it.
type member struct {
	f    *Feed
	walk func(context.Context) ([]mapping.Property, time.Time, error)
}

func newMember(t *testing.T, c *clock, sh Shared) *member {
	f := newFeed(t, c, Config{Shared: sh})
	return &member{f: f, walk: f.Walked(func(context.Context) ([]mapping.Property, time.Time, error) {
		return nil, time.Time{}, nil
	})}
}

// leads walks s itself; takes loads another member's publication of s.
func (m *member) leads(t *testing.T, s *upstream.Snapshot) {
	t.Helper()
	m.f.walked.Store(s.LoadedAt.UnixMilli())
	_, _ = m.f.Watch(func(context.Context) (*upstream.Snapshot, error) { return s, nil })(context.Background())
}

func (m *member) takes(t *testing.T, s *upstream.Snapshot) {
	t.Helper()
	_, _ = m.f.Watch(func(context.Context) (*upstream.Snapshot, error) { return s, nil })(context.Background())
}

// ids reads every event after after from m.
func (m *member) ids(t *testing.T, after string) []string {
	t.Helper()
	var out []string
	for {
		es, p, err := page(t, m.f, after, 2, all{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			out = append(out, e.Type+" "+e.ID)
		}
		after = p.Next
		if !p.More {
			return out
		}
	}
}

// docs/contract.md section 23, a fleet has one feed: whoever walks appends
// (once per walk), every member answers the same events and ids; a member
// whose own copy is behind diffs against the base the feed keeps.
func TestSharedFeedOneFeedForTheFleet(t *testing.T) {
	c := &clock{t0}
	sh := &memShared{}
	ms := []*member{newMember(t, c, sh), newMember(t, c, sh), newMember(t, c, sh)}
	var walks []*upstream.Snapshot
	for i := range 4 {
		props := []mapping.Property{prop(1, fmt.Sprint("A", i), "active"), prop(2, "B", "active")}
		if i%2 == 1 {
			props = append(props, prop(3, "C", "active"))
		}
		walks = append(walks, snap(t0.Add(time.Duration(i)*time.Minute), props...))
	}
	// Walk 0: member 0 leads (the baseline), the others take it.
	ms[0].leads(t, walks[0])
	ms[1].takes(t, walks[0])
	ms[2].takes(t, walks[0])
	cursor := ms[1].f.Next(walks[0])
	// Walk 1 by member 1; member 2 does not load it. Walk 2 by member 2,
	// whose copy is walk 0: it reads the base. Walk 3 by member 0 after
	// taking walk 2.
	c.now = walks[1].LoadedAt
	ms[1].leads(t, walks[1])
	c.now = walks[2].LoadedAt
	ms[2].leads(t, walks[2])
	ms[0].takes(t, walks[2])
	c.now = walks[3].LoadedAt
	ms[0].leads(t, walks[3])
	if sh.appends != 4 {
		t.Errorf("%d appends; want one per walk (4)", sh.appends)
	}
	want := ms[0].ids(t, cursor)
	if len(want) != 6 { // walk 1: A updated, C created; 2: A, C removed; 3: A, C created
		t.Fatalf("events %v; want 6", want)
	}
	for i, m := range ms[1:] {
		if err := m.f.sync(context.Background()); err != nil { // as its next read of the feed does
			t.Fatal(err)
		}
		if got := m.ids(t, cursor); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("member %d: %v; want %v", i+1, got, want)
		}
	}
	// The Next of a walk that has not been appended (publish comes first)
	// still misses nothing: its events are at or before it.
	if got := ms[1].ids(t, ms[1].f.Next(walks[2])); len(got) != 2 {
		t.Errorf("after walk 2: %v; want walk 3's two events", got)
	}
}

// Two members walk at once from the same base: the second append is
// refused (ErrConflict), and it makes no events of its own: the feed's next
// walk is the first one's; no events twice.
func TestSharedFeedConflictAppendsOnce(t *testing.T) {
	c := &clock{t0}
	sh := &memShared{}
	a, b := newMember(t, c, sh), newMember(t, c, sh)
	s0 := snap(t0, prop(1, "A", "active"))
	a.leads(t, s0)
	b.takes(t, s0)
	s1 := snap(t0.Add(time.Minute), prop(1, "A1", "active"))
	s1b := snap(t0.Add(time.Minute-time.Millisecond), prop(1, "A1", "active"))
	a.leads(t, s1)
	b.leads(t, s1b) // older than the feed's last walk: nothing
	if sh.appends != 2 || len(sh.events) != 1 {
		t.Errorf("appends %d, events %d; want 2 and 1", sh.appends, len(sh.events))
	}
}

// Redis down: no append, no error to partners from a member that has read
// the feed; the next walk's events carry the changes.
func TestSharedFeedDownMeansLaterEvents(t *testing.T) {
	c := &clock{t0}
	sh := &memShared{}
	a := newMember(t, c, sh)
	s0 := snap(t0, prop(1, "A", "active"))
	a.leads(t, s0)
	cursor := a.f.Next(s0)
	sh.down = true
	a.leads(t, snap(t0.Add(time.Minute), prop(1, "A1", "active"), prop(2, "B", "active")))
	if es, _, err := page(t, a.f, cursor, 50, all{}); err != nil || len(es) != 0 {
		t.Fatalf("while down: %v %v", es, err)
	}
	sh.down = false
	a.leads(t, snap(t0.Add(2*time.Minute), prop(1, "A2", "active"), prop(2, "B", "active")))
	if got := a.ids(t, cursor); len(got) != 2 {
		t.Errorf("after Redis is back: %v; want A updated and B created", got)
	}
}

// An append whose reply was lost (it landed after the client gave up)
// does not stop the feed: the walker's next walk finds its walk was the
// feed's last and diffs against it, with no base read and no conflict,
// and every change is an event once.
func TestSharedFeedAppendLandedAfterATimeout(t *testing.T) {
	c := &clock{t0}
	sh := &memShared{}
	a := newMember(t, c, sh)
	s0 := snap(t0, prop(1, "A", "active"))
	a.leads(t, s0)
	cursor := a.f.Next(s0)
	sh.lost = true
	a.leads(t, snap(t0.Add(time.Minute), prop(1, "A1", "active"), prop(2, "B", "active")))
	bases := sh.baseReads
	a.leads(t, snap(t0.Add(2*time.Minute), prop(1, "A2", "active"), prop(2, "B", "active"), prop(3, "C", "active")))
	if sh.appends != 3 {
		t.Fatalf("%d appends; want every walk's (3)", sh.appends)
	}
	if sh.baseReads != bases {
		t.Errorf("%d reads of the base; want none: the walker holds the walk that landed", sh.baseReads-bases)
	}
	got := a.ids(t, cursor)
	var types []string
	for _, e := range got {
		types = append(types, strings.Fields(e)[0])
	}
	if fmt.Sprint(types) != "[property.updated property.created property.updated property.created]" {
		t.Errorf("events %v; want walk 1's two and walk 2's two, once each", got)
	}
}

// A member that never read the feed answers Unavailable (503), not an
// empty page that would hide events.
func TestSharedFeedUnreadIsUnavailable(t *testing.T) {
	c := &clock{t0}
	sh := &memShared{down: true}
	a := newMember(t, c, sh)
	_, _, err := page(t, a.f, "", 50, all{})
	var ue *upstream.Error
	if !errors.As(err, &ue) || ue.Kind != upstream.Unavailable {
		t.Errorf("unread feed: %v; want Unavailable", err)
	}
}

// docs/contract.md section 25: a member whose copy is behind checks a
// cursor past it against the shared feed; when it cannot read the feed
// (Redis away, or the position fields refused as forged), it cannot tell
// another member's cursor from one never issued, and says so (503, ask
// again), not 422, which would send a partner to list the brand again.
// Once the feed reads again, the cursor is served; one never issued is
// still 422.
func TestSharedFeedUnreadableIsNoReasonToRefuseACursor(t *testing.T) {
	c := &clock{t0}
	sh := &memShared{}
	a, b := newMember(t, c, sh), newMember(t, c, sh)
	s0 := snap(t0, prop(1, "A", "active"))
	a.leads(t, s0)
	b.takes(t, s0)
	s1 := snap(t0.Add(time.Minute), prop(1, "A1", "active"))
	a.leads(t, s1) // b has not loaded it
	cursor := a.f.Next(s1)
	unavailable := func(what string, err error) {
		t.Helper()
		var ue *upstream.Error
		if !errors.As(err, &ue) || ue.Kind != upstream.Unavailable || ue.RetryAfter <= 0 {
			t.Errorf("%s: %v; want Unavailable with a Retry-After", what, err)
		}
	}
	for _, state := range []string{"forged", "down"} {
		sh.mu.Lock()
		sh.forged.State, sh.down = state == "forged", state == "down"
		sh.mu.Unlock()
		_, _, err := page(t, b.f, cursor, 50, all{})
		unavailable("after, the shared feed "+state, err)
		_, err = b.f.AsOf(context.Background(), cursor, time.Time{})
		unavailable("asOf, the shared feed "+state, err)
	}
	sh.mu.Lock()
	sh.forged.State, sh.down = false, false
	sh.mu.Unlock()
	if es, _, err := page(t, b.f, cursor, 50, all{}); err != nil || len(es) != 0 {
		t.Errorf("the feed readable again: %v %v; want no event after the walk's end", es, err)
	}
	never := a.f.Next(snap(t0.Add(time.Hour)))
	if _, _, err := page(t, b.f, never, 50, all{}); !errors.Is(err, ErrCursorUnknown) {
		t.Errorf("a walk no member made: %v; want ErrCursorUnknown", err)
	}
}

// A member's copy older than SyncEvery is read again in the background
// while partners read it (a page answers from the copy without waiting
// for Redis): a later page has what another member appended meanwhile.
func TestSharedFeedCopyRefreshedInTheBackground(t *testing.T) {
	c := &clock{t0}
	sh := &memShared{}
	a, b := newMember(t, c, sh), newMember(t, c, sh)
	s0 := snap(t0, prop(1, "A", "active"))
	a.leads(t, s0)
	b.takes(t, s0)
	cursor := b.f.Next(s0)
	c.now = t0.Add(time.Minute)
	a.leads(t, snap(c.now, prop(1, "A1", "active")))
	testkit.Eventually(t, "b's copy is read again", func() bool {
		es, _, err := page(t, b.f, cursor, 50, all{})
		return err == nil && len(es) == 1
	})
}

// What the shared feed refuses is logged at ERROR at most once a minute
// per cause, each line counting what was found since the previous one: a
// forger writing on every read cannot flood the log, nor go unseen.
func TestSharedFeedForgeriesLoggedOnceAMinute(t *testing.T) {
	c := &clock{t0}
	sh := &memShared{forged: Forged{Events: 2}}
	lg, buf := testkit.NewLogger()
	tel, err := observability.New(context.Background(), observability.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	f := newFeed(t, c, Config{Shared: sh, Log: lg, Meter: tel.Meter()})
	for range 3 {
		if err := f.sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := buf.Count("level=ERROR"); n != 1 || buf.Count("cause=event count=2") != 1 {
		t.Fatalf("three reads within a minute: %d ERROR lines; want one, count=2:\n%s", n, buf)
	}
	sh.forged = Forged{Events: 1, Deleted: 1}
	c.now = t0.Add(time.Minute)
	if err := f.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if buf.Count("cause=event count=5") != 1 || buf.Count("cause=deleted count=1") != 1 || buf.Count("level=ERROR") != 3 {
		t.Errorf("a minute later: want one line per cause, the events' counting the four held back and this one:\n%s", buf)
	}
	fams := testkit.Scrape(t, tel.MetricsHandler()) // the metric counts every one
	for cause, want := range map[string]float64{"event": 7, "deleted": 1, "state": 0} {
		if got := testkit.Series(t, fams, "partner_edge_events_refused_total", map[string]string{"pms": "live", "cause": cause}).GetCounter().GetValue(); got != want {
			t.Errorf("partner_edge_events_refused_total{cause=%q} = %v, want %v", cause, got, want)
		}
	}
}

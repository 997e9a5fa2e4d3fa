package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
)

// t0 is the time of the tests' first walk.
var t0 = time.Date(2026, 11, 22, 9, 41, 0, 0, time.UTC)

func prop(n int, name, status string) mapping.Property {
	return mapping.Property{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n), Name: name, Status: status,
		Timezone: "Europe/Paris", CreatedAt: t0, UpdatedAt: t0}
}

func snap(at time.Time, props ...mapping.Property) *upstream.Snapshot {
	return upstream.SnapshotOf(props, at)
}

// clock is a settable clock for the feeds under test.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// walks returns a loader that returns the given snapshots in turn.
func walks(snaps ...*upstream.Snapshot) Loader {
	i := 0
	return func(context.Context) (*upstream.Snapshot, error) {
		s := snaps[i]
		i = min(i+1, len(snaps)-1)
		return s, nil
	}
}

// all is a Viewer that sees every property; some sees a list.
type all struct{}

func (all) AllProperties() bool   { return true }
func (all) CanSee(id string) bool { return true }

type some []string

func (some) AllProperties() bool { return false }
func (s some) CanSee(id string) bool {
	for _, x := range s {
		if x == id {
			return true
		}
	}
	return false
}

// event is a decoded event.
type event struct {
	Object     string           `json:"object"`
	ID         string           `json:"id"`
	Type       string           `json:"type"`
	OccurredAt string           `json:"occurredAt"`
	Data       mapping.Property `json:"-"`
	Raw        json.RawMessage  `json:"data"`
}

// page reads one page of f as a partner would.
func page(t *testing.T, f *Feed, after string, limit int, v Viewer) ([]event, Page, error) {
	t.Helper()
	b, p, err := f.AppendPage(context.Background(), []byte("["), after, after != "", limit, v)
	if err != nil {
		return nil, p, err
	}
	var es []event
	if err := json.Unmarshal(append(b, ']'), &es); err != nil {
		t.Fatalf("page is not JSON: %v\n%s", err, b)
	}
	return es, p, nil
}

func types(es []event) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Type)
	}
	return strings.Join(s, " ")
}

func newFeed(t *testing.T, c *clock, cfg Config) *Feed {
	t.Helper()
	if cfg.Mode == "" {
		cfg.Mode = "live"
	}
	cfg.Now = c.Now
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// docs/contract.md section 23: the first walk is the baseline; each later
// one's changes, in id order, after the list's cursor; a record that
// stops mapping is removed and comes back created.
func TestFeedEventsOfWalks(t *testing.T) {
	c := &clock{t0}
	f := newFeed(t, c, Config{})
	a, b, d := prop(1, "Alpha", "active"), prop(2, "Beta", "active"), prop(3, "Delta", "active")
	s1 := snap(t0, a, b, d)
	b2 := b
	b2.Name = "Beta Two"
	e := prop(4, "Echo", "inactive")
	s2 := snap(t0.Add(time.Minute), a, b2, e) // b renamed, d gone (stopped mapping), e new
	s3 := snap(t0.Add(2*time.Minute), a, b2, d, e)
	load := f.Watch(walks(s1, s2, s3))

	got, _ := load(context.Background())
	cursor := f.Next(got)
	es, p, err := page(t, f, cursor, 50, all{})
	if err != nil || len(es) != 0 || p.Next != cursor || p.More {
		t.Fatalf("after the baseline: %v %+v %v; want no events, next = the list's cursor", es, p, err)
	}
	if es, _, _ := page(t, f, "", 50, all{}); len(es) != 0 {
		t.Fatalf("the first walk made events: %v", es)
	}

	c.now = t0.Add(time.Minute)
	_, _ = load(context.Background())
	es, p, err = page(t, f, cursor, 50, all{})
	if err != nil || types(es) != "property.updated property.removed property.created" || p.More {
		t.Fatalf("second walk: %s %+v %v", types(es), p, err)
	}
	for i, want := range []mapping.Property{b2, d, e} { // the new Property; the last one served
		if es[i].Raw == nil || !strings.Contains(string(es[i].Raw), `"name":"`+want.Name+`"`) ||
			!strings.HasPrefix(es[i].ID, "evt_") || es[i].Object != "event" || es[i].OccurredAt != "2026-11-22T09:42:00.000Z" {
			t.Errorf("event %d: %+v %s; want %s's", i, es[i], es[i].Raw, want.Name)
		}
	}
	if p.Next != es[2].ID {
		t.Errorf("next %q; want the last event's id %q", p.Next, es[2].ID)
	}

	_, _ = load(context.Background())
	es2, p2, err := page(t, f, p.Next, 50, all{})
	if err != nil || types(es2) != "property.created" || !strings.Contains(string(es2[0].Raw), "Delta") {
		t.Fatalf("third walk: %s %+v %v; want Delta created again", types(es2), p2, err)
	}
	// Paging with limit gives the same events in the same order.
	var paged []string
	after := cursor
	for {
		es, p, err := page(t, f, after, 1, all{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			paged = append(paged, e.ID)
		}
		after = p.Next
		if !p.More {
			break
		}
	}
	if want := []string{es[0].ID, es[1].ID, es[2].ID, es2[0].ID}; fmt.Sprint(paged) != fmt.Sprint(want) {
		t.Errorf("paged by one: %v; want %v", paged, want)
	}
	// One page across the two walks' events (two buffers, copied by run).
	if all, _, err := page(t, f, cursor, 50, all{}); err != nil || len(all) != 4 || all[3].ID != es2[0].ID {
		t.Errorf("one page of both walks: %v %v", all, err)
	}
}

func TestFeedGrantedKeySeesItsOwn(t *testing.T) {
	c := &clock{t0}
	f := newFeed(t, c, Config{})
	var before, after []mapping.Property
	for i := range 30 {
		before = append(before, prop(i, "Name", "active"))
		after = append(after, prop(i, fmt.Sprintf("Name %d", i), "active"))
	}
	load := f.Watch(walks(snap(t0, before...), snap(t0.Add(time.Minute), after...)))
	s, _ := load(context.Background())
	cursor := f.Next(s)
	_, _ = load(context.Background())
	key := some{before[3].ID, before[17].ID, before[29].ID}
	es, p, err := page(t, f, cursor, 2, key)
	if err != nil || len(es) != 2 || !p.More {
		t.Fatalf("first page: %d %+v %v", len(es), p, err)
	}
	es2, p2, err := page(t, f, p.Next, 2, key)
	if err != nil || len(es2) != 1 || p2.More {
		t.Fatalf("second page: %d %+v %v", len(es2), p2, err)
	}
	for _, e := range append(es, es2...) {
		if !strings.Contains(string(e.Raw), before[3].ID) && !strings.Contains(string(e.Raw), before[17].ID) &&
			!strings.Contains(string(e.Raw), before[29].ID) {
			t.Errorf("event of a property the key is not granted: %s", e.Raw)
		}
	}
	// Its next moved past the events it cannot see: nothing more to read.
	if es, p3, _ := page(t, f, p2.Next, 50, key); len(es) != 0 || p3.Next != p2.Next {
		t.Errorf("after the last page: %d events, next %q (was %q)", len(es), p3.Next, p2.Next)
	}
}

func TestFeedCursorChecks(t *testing.T) {
	c := &clock{t0}
	f := newFeed(t, c, Config{})
	s, _ := f.Watch(walks(snap(t0, prop(1, "A", "active"))))(context.Background())
	test := newFeed(t, c, Config{Mode: "test"})
	future := string(appendCursor(nil, 'l', EndOf(t0.Add(2*time.Hour).UnixMilli())))
	for _, after := range []string{"bogus", "evt_", f.Next(s)[:20], test.Next(s), future} {
		if _, _, err := page(t, f, after, 50, all{}); !errors.Is(err, ErrCursorUnknown) {
			t.Errorf("after %q: %v; want ErrCursorUnknown", after, err)
		}
	}
	before := string(appendCursor(nil, 'l', EndOf(t0.Add(-time.Hour).UnixMilli())))
	if _, _, err := page(t, f, before, 50, all{}); !errors.Is(err, ErrCursorExpired) {
		t.Errorf("a cursor from before the feed started: %v; want ErrCursorExpired", err)
	}
}

// A restarted single edge: a new feed, whose first walk is later than any
// cursor the old one issued, answers them ErrCursorExpired.
func TestFeedRestartExpiresOldCursors(t *testing.T) {
	c := &clock{t0}
	old := newFeed(t, c, Config{})
	s, _ := old.Watch(walks(snap(t0, prop(1, "A", "active"))))(context.Background())
	cursor := old.Next(s)
	c.now = t0.Add(time.Minute)
	restarted := newFeed(t, c, Config{})
	_, _ = restarted.Watch(walks(snap(c.now, prop(1, "A", "active"))))(context.Background())
	if _, _, err := page(t, restarted, cursor, 50, all{}); !errors.Is(err, ErrCursorExpired) {
		t.Errorf("old cursor on a restarted feed: %v; want ErrCursorExpired", err)
	}
}

func TestFeedBounds(t *testing.T) {
	c := &clock{t0}
	f := newFeed(t, c, Config{Max: 1, Retention: time.Hour})
	var snaps []*upstream.Snapshot
	for i := range 4 {
		snaps = append(snaps, snap(t0.Add(time.Duration(i)*time.Minute), prop(1, fmt.Sprint("A", i), "active")))
	}
	load := f.Watch(walks(snaps...))
	s, _ := load(context.Background())
	cursor := f.Next(s)
	for range 3 {
		_, _ = load(context.Background())
	}
	if _, _, err := page(t, f, cursor, 50, all{}); !errors.Is(err, ErrCursorExpired) {
		t.Errorf("past EDGE_EVENTS_MAX=1: %v; want ErrCursorExpired", err)
	}
	es, p, err := page(t, f, "", 50, all{})
	if err != nil || len(es) != 1 || !strings.Contains(string(es[0].Raw), "A3") {
		t.Fatalf("from the oldest kept: %v %v", es, err)
	}
	last := p.Next
	// Retention: an hour later the event is gone, its cursor still good
	// (nothing after it was lost), the one before it expired.
	c.now = t0.Add(2 * time.Hour)
	if es, _, err := page(t, f, last, 50, all{}); err != nil || len(es) != 0 {
		t.Errorf("cursor of the last event after retention: %v %v", es, err)
	}
	before := f.Next(snaps[2])
	if _, _, err := page(t, f, before, 50, all{}); !errors.Is(err, ErrCursorExpired) {
		t.Errorf("a cursor before an event past retention: %v; want ErrCursorExpired", err)
	}
	if n, _ := f.log.stats(); n != 1 {
		t.Errorf("kept %d events; want 1 (EDGE_EVENTS_MAX)", n)
	}
}

func TestFeedNextIsEncodedOncePerSnapshot(t *testing.T) {
	c := &clock{t0}
	f := newFeed(t, c, Config{})
	s, _ := f.Watch(walks(snap(t0, prop(1, "A", "active"))))(context.Background())
	if n := testing.AllocsPerRun(100, func() { _ = f.Next(s) }); n != 0 {
		t.Errorf("Next of the current snapshot allocates %v times", n)
	}
	b := make([]byte, 0, 4096)
	after := f.Next(s)
	if n := testing.AllocsPerRun(100, func() {
		_, _, _ = f.AppendPage(context.Background(), b[:0], after, true, 50, all{})
	}); n != 0 {
		t.Errorf("AppendPage allocates %v times", n)
	}
}

package events

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// Read hands out the events a page holds, one by one, with the very bytes
// of the page, selected by the viewer as a page selects them; Position is
// where a reader starting now begins; Appended is called after each walk
// that added events, never after one that added none.
func TestReadIsThePageEventByEvent(t *testing.T) {
	c := &clock{t0}
	woken := 0
	f := newFeed(t, c, Config{Appended: func() { woken++ }})
	ctx := context.Background()
	if _, err := f.Position(ctx); !isUnavailable(err) {
		t.Fatalf("Position before the first walk: %v; want Unavailable", err)
	}
	a, b, d := prop(1, "Alpha", "active"), prop(2, "Beta", "active"), prop(3, "Delta", "active")
	a2, b2, d2 := a, b, d
	a2.Name, b2.Name, d2.Name = "Alpha Two", "Beta Two", "Delta Two"
	load := f.Watch(walks(snap(t0, a, b, d), snap(t0.Add(time.Minute), a2, b2, d2), snap(t0.Add(2*time.Minute), a2, b2, d2)))

	_, _ = load(ctx)
	start, err := f.Position(ctx)
	if err != nil || woken != 0 {
		t.Fatalf("Position after the baseline: %q %v, Appended %d times; want a cursor, none", start, err, woken)
	}
	c.now = t0.Add(time.Minute)
	_, _ = load(ctx)
	if woken != 1 {
		t.Fatalf("Appended called %d times after a walk with changes; want 1", woken)
	}
	c.now = t0.Add(2 * time.Minute)
	_, _ = load(ctx) // no change: no events, no call
	if woken != 1 {
		t.Fatalf("Appended called after a walk without changes (%d)", woken)
	}

	for _, v := range []Viewer{all{}, some{b.ID, d.ID}} {
		b, _, err := f.AppendPage(ctx, nil, start, true, 50, v)
		if err != nil {
			t.Fatal(err)
		}
		evs, next, err := f.Read(ctx, start, true, 50, v)
		if err != nil {
			t.Fatal(err)
		}
		var joined []string
		for _, e := range evs {
			joined = append(joined, string(e.JSON))
			if !strings.Contains(string(e.JSON), `"id":"`+e.ID+`"`) || !e.OccurredAt.Equal(t0.Add(time.Minute)) {
				t.Errorf("event %s at %s: %s", e.ID, e.OccurredAt, e.JSON)
			}
		}
		if got := strings.Join(joined, ","); got != string(b) {
			t.Errorf("%T: Read's bytes\n%s\nwant the page's\n%s", v, got, b)
		}
		if len(evs) == 0 || next != evs[len(evs)-1].ID {
			t.Errorf("%T: next %q after %d events", v, next, len(evs))
		}
		// One at a time from each id: the same events.
		after, n := start, 0
		for {
			one, _, err := f.Read(ctx, after, true, 1, v)
			if err != nil || len(one) > 1 {
				t.Fatal(one, err)
			}
			if len(one) == 0 {
				break
			}
			if one[0].ID != evs[n].ID {
				t.Fatalf("%T: read one by one, event %d is %s; want %s", v, n, one[0].ID, evs[n].ID)
			}
			after, n = one[0].ID, n+1
		}
		if n != len(evs) {
			t.Errorf("%T: one by one read %d events; want %d", v, n, len(evs))
		}
	}
	if evs, _, _ := f.Read(ctx, start, true, 50, some{}); len(evs) != 0 {
		t.Errorf("a viewer that sees nothing read %d events", len(evs))
	}
	now, err := f.Position(ctx)
	if err != nil || now == start {
		t.Fatalf("Position after changes: %q %v; want a newer one than %q", now, err, start)
	}
	if evs, _, err := f.Read(ctx, now, true, 50, all{}); err != nil || len(evs) != 0 {
		t.Errorf("Read after Position: %d events, %v; want none", len(evs), err)
	}
	if _, _, err := f.Read(ctx, "evt_nope", true, 50, all{}); !errors.Is(err, ErrCursorUnknown) {
		t.Errorf("Read after a cursor never issued: %v", err)
	}
}

// A position the feed dropped is ErrCursorExpired for Read as for a page.
func TestReadExpired(t *testing.T) {
	c := &clock{t0}
	f := newFeed(t, c, Config{Max: 1})
	a, b := prop(1, "Alpha", "active"), prop(2, "Beta", "active")
	a2, b2 := a, b
	a2.Name, b2.Name = "A2", "B2"
	ctx := context.Background()
	load := f.Watch(walks(snap(t0, a, b), snap(t0.Add(time.Minute), a2, b2)))
	_, _ = load(ctx)
	start, _ := f.Position(ctx)
	c.now = t0.Add(time.Minute)
	_, _ = load(ctx) // two events, one kept
	if _, _, err := f.Read(ctx, start, true, 10, all{}); !errors.Is(err, ErrCursorExpired) {
		t.Fatalf("Read after a dropped position: %v; want ErrCursorExpired", err)
	}
}

func isUnavailable(err error) bool {
	var ue *upstream.Error
	return errors.As(err, &ue) && ue.Kind == upstream.Unavailable
}

package feedsource_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
	"github.com/partner-edge/partner-edge/upstream/webhooks/feedsource"
)

// grants is a Viewer: every property (nil) or those listed.
type grants map[string]bool

func (g grants) AllProperties() bool   { return g == nil }
func (g grants) CanSee(id string) bool { return g == nil || g[id] }

func props(n int, name string) []mapping.Property {
	t := time.UnixMilli(0).UTC()
	out := make([]mapping.Property, n)
	for i := range out {
		out[i] = mapping.Property{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Name: fmt.Sprintf("%s %d", name, i),
			Status: "active", Timezone: "Europe/Paris", CreatedAt: t, UpdatedAt: t}
	}
	return out
}

// feed is a feed after two walks of n properties, every one renamed by the
// second (n events); start is its position after the first.
func feed(t *testing.T, n int) (f *events.Feed, start string) {
	t.Helper()
	now := time.Now()
	f, err := events.New(events.Config{Mode: "live", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	snaps := []*upstream.Snapshot{upstream.SnapshotOf(props(n, "A"), now.Add(-time.Minute)), upstream.SnapshotOf(props(n, "B"), now)}
	load := f.Watch(func(context.Context) (*upstream.Snapshot, error) { s := snaps[0]; snaps = snaps[1:]; return s, nil })
	ctx := context.Background()
	if _, err := load(ctx); err != nil {
		t.Fatal(err)
	}
	if start, err = f.Position(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := load(ctx); err != nil {
		t.Fatal(err)
	}
	return f, start
}

// An endpoint reads what GET /v1/events serves its key, in order, the
// page's bytes; nothing while its key receives nothing (ErrPaused); an
// endpoint whose key sees one property far in the feed reaches it however
// many events it may not see come first, and reads on from where it looked
// last.
func TestSourceReadsWhatTheKeySees(t *testing.T) {
	f, start := feed(t, 10_050)
	ctx := context.Background()
	last := props(10_050, "B")[10_049].ID
	var access map[string]feedsource.Access
	src := &feedsource.Source{Keys: func(id string) (feedsource.Access, bool) { a, ok := access[id]; return a, ok }}
	access = map[string]feedsource.Access{
		"key_all": {Key: "key_all", Feed: f, Viewer: grants(nil)},
		"key_one": {Key: "key_one", Feed: f, Viewer: grants{last: true}},
	}
	all := &webhooks.Endpoint{ID: "whe_all", KeyID: "key_all"}
	evs, err := src.Read(ctx, all, start, 3)
	if err != nil || len(evs) != 3 {
		t.Fatalf("Read: %d events, %v", len(evs), err)
	}
	page, _, err := f.AppendPage(ctx, nil, start, true, 3, grants(nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(evs[0].Body) + "," + string(evs[1].Body) + "," + string(evs[2].Body); got != string(page) {
		t.Errorf("bodies\n%s\nwant the page's\n%s", got, page)
	}
	next, err := src.Read(ctx, all, evs[2].ID, 1)
	if err != nil || len(next) != 1 || next[0].ID <= evs[2].ID {
		t.Fatalf("Read after the third: %v %v", next, err)
	}

	one := &webhooks.Endpoint{ID: "whe_one", KeyID: "key_one"}
	evs, err = src.Read(ctx, one, start, 10)
	if err != nil || len(evs) != 1 || !contains(evs[0].Body, last) {
		t.Fatalf("a key granted the last property read %d events, %v; want that one", len(evs), err)
	}
	if evs, err := src.Read(ctx, one, evs[0].ID, 10); err != nil || len(evs) != 0 {
		t.Fatalf("after the last event: %d events, %v; want none", len(evs), err)
	}

	delete(access, "key_all") // revoked, suspended, expired: the Keys say
	if _, err := src.Read(ctx, all, start, 3); !errors.Is(err, webhooks.ErrPaused) {
		t.Errorf("Read of a key that receives nothing: %v; want ErrPaused", err)
	}
	if _, err := src.Position(ctx, "key_all"); err == nil {
		t.Error("Position of a key that receives nothing")
	}
	if pos, err := src.Position(ctx, "key_one"); err != nil {
		t.Fatal(err)
	} else if evs, err := src.Read(ctx, one, pos, 10); err != nil || len(evs) != 0 {
		t.Errorf("Read after Position: %d events, %v; want none", len(evs), err)
	}
}

// A position the feed dropped is webhooks.ErrExpired (the endpoint is
// disabled, events_expired); one it never issued is an error tried again.
func TestSourceExpired(t *testing.T) {
	now := time.Now()
	f, err := events.New(events.Config{Mode: "live", Max: 1, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	snaps := []*upstream.Snapshot{upstream.SnapshotOf(props(2, "A"), now.Add(-time.Minute)), upstream.SnapshotOf(props(2, "B"), now)}
	load := f.Watch(func(context.Context) (*upstream.Snapshot, error) { s := snaps[0]; snaps = snaps[1:]; return s, nil })
	ctx := context.Background()
	_, _ = load(ctx)
	start, _ := f.Position(ctx)
	_, _ = load(ctx)
	src := &feedsource.Source{Keys: func(string) (feedsource.Access, bool) {
		return feedsource.Access{Key: "k", Feed: f, Viewer: grants(nil)}, true
	}}
	ep := &webhooks.Endpoint{ID: "whe_1", KeyID: "k"}
	if _, err := src.Read(ctx, ep, start, 10); !errors.Is(err, webhooks.ErrExpired) {
		t.Errorf("Read after a dropped position: %v; want ErrExpired", err)
	}
	if _, err := src.Read(ctx, ep, "evt_0000000000000000000000000", 10); err == nil || errors.Is(err, webhooks.ErrExpired) || errors.Is(err, webhooks.ErrPaused) {
		t.Errorf("Read after a position never issued: %v; want another error", err)
	}
}

func contains(b []byte, s string) bool { return strings.Contains(string(b), s) }

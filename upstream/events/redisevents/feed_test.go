package redisevents

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
)

// member is one fleet member's feed over its own client of the Redis.
type member struct {
	feed *events.Feed
	walk func(context.Context) ([]mapping.Property, time.Time, error)
	at   time.Time          // what walk says it walked
	log  *testkit.LogBuffer // what the feed logged
}

func newMember(t *testing.T, f form, now func() time.Time) *member {
	t.Helper()
	st := newStore(t, f.client(t), Config{Now: now})
	lg, buf := testkit.NewLogger()
	feed, err := events.New(events.Config{Mode: "live", Shared: st, Now: now, Log: lg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(feed.Close)
	m := &member{feed: feed, log: buf}
	m.walk = feed.Walked(func(context.Context) ([]mapping.Property, time.Time, error) { return nil, m.at, nil })
	return m
}

// load is the cache's load of s: walked here (lead) or another's.
func (m *member) load(t *testing.T, s *upstream.Snapshot, lead bool) {
	t.Helper()
	if lead {
		m.at = s.LoadedAt
		_, _, _ = m.walk(context.Background())
	}
	_, _ = m.feed.Watch(func(context.Context) (*upstream.Snapshot, error) { return s, nil })(context.Background())
}

// read follows the feed from after to its end, a page of two at a time.
func (m *member) read(t *testing.T, after string) []string {
	t.Helper()
	var out []string
	for {
		b, p, err := m.feed.AppendPage(context.Background(), []byte("["), after, true, 2, viewAll{})
		if err != nil {
			t.Fatal(err)
		}
		var es []struct{ ID, Type string }
		if err := json.Unmarshal(append(b, ']'), &es); err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			out = append(out, e.Type+" "+e.ID)
		}
		if after = p.Next; !p.More {
			return out
		}
	}
}

type viewAll struct{}

func (viewAll) AllProperties() bool { return true }
func (viewAll) CanSee(string) bool  { return true }

// docs/contract.md section 23 on every form: three members, walks made by
// different ones (one by a member that did not load the walk before it);
// one append per walk; every member answers the same events, ids and order
// after the list cursor of the first walk.
func TestFeedsShareOneFeed(t *testing.T) {
	eachForm(t, func(t *testing.T, f form) {
		now := t0
		clock := func() time.Time { return now }
		ms := []*member{newMember(t, f, clock), newMember(t, f, clock), newMember(t, f, clock)}
		var walks []*upstream.Snapshot
		for i := range 4 {
			props := []mapping.Property{{ID: "00000000-0000-4000-8000-000000000001", Name: fmt.Sprint("A", i), Status: "active",
				Timezone: "Europe/Paris", CreatedAt: t0, UpdatedAt: t0}}
			if i%2 == 1 {
				props = append(props, mapping.Property{ID: "00000000-0000-4000-8000-000000000002", Name: "B", Status: "inactive",
					Timezone: "UTC", CreatedAt: t0, UpdatedAt: t0})
			}
			walks = append(walks, upstream.SnapshotOf(props, t0.Add(time.Duration(i)*time.Minute)))
		}
		ms[0].load(t, walks[0], true)
		ms[1].load(t, walks[0], false)
		ms[2].load(t, walks[0], false)
		cursor := ms[2].feed.Next(walks[0])
		for i, leader := range []int{1, 2, 0} { // walks 1, 2, 3
			now = walks[i+1].LoadedAt
			ms[leader].load(t, walks[i+1], true)
			if i == 1 {
				ms[0].load(t, walks[2], false)
			}
		}
		want := ms[0].read(t, cursor)
		if len(want) != 6 {
			t.Fatalf("events %v; want 6 (A updated and B created, A updated and B removed, A updated and B created)", want)
		}
		for i, m := range ms {
			m.load(t, walks[3], false) // a load reads the shared feed
			if got := m.read(t, cursor); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("member %d: %v; want %v", i, got, want)
			}
		}
		n, err := f.raw(t).XLen(context.Background(), "pe:ev2:{aurora:live}:s").Result()
		if err != nil || n != 6 {
			t.Errorf("stream length %d (%v); want 6: one append per walk", n, err)
		}
	})
}

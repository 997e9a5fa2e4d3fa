package redisevents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
)

// Redis cannot steer the feed (docs/scaling.md, "Who can steer the
// feed"): each forgery of what the feed keeps in Redis is refused and
// logged at ERROR, the feed keeps appending, valid cursors keep their
// events and every member (a newcomer too) answers the same.

// trio is three members sharing one feed on the test's clock, and the
// walks they made: walk i names property A "A<i>" and holds property B
// on odd walks, so every walk after the first makes two events.
type trio struct {
	f     form
	clock *testkit.Clock
	ms    []*member
	walks []*upstream.Snapshot
	list  string // the list cursor of walk 0
	raw   redis.UniversalClient
	store *Store // a store of the feed, to look at what it holds
}

func newFleet(t *testing.T, f form) *trio {
	t.Helper()
	fl := &trio{f: f, clock: testkit.NewClockAt(t0), raw: f.raw(t)}
	if err := flushAll(context.Background(), fl.raw); err != nil { // a Redis of the form is shared by subtests
		t.Fatal(err)
	}
	fl.store = newStore(t, f.client(t), Config{Now: fl.clock.Now})
	for range 3 {
		fl.ms = append(fl.ms, newMember(t, f, fl.clock.Now))
	}
	fl.walk(t, 0)
	fl.list = fl.ms[1].feed.Next(fl.walks[0])
	fl.walk(t, 1)
	fl.walk(t, 2)
	return fl
}

// walk makes the next walk, walked by member leader and loaded by all.
func (fl *trio) walk(t *testing.T, leader int) { t.Helper(); fl.walkSkipping(t, leader, nil) }

// walkSkipping is walk, the snapshot not loaded by member skip.
func (fl *trio) walkSkipping(t *testing.T, leader int, skip *member) {
	t.Helper()
	i := len(fl.walks)
	props := []mapping.Property{{ID: "00000000-0000-4000-8000-000000000001", Name: fmt.Sprint("A", i), Status: "active",
		Timezone: "Europe/Paris", CreatedAt: t0, UpdatedAt: t0}}
	if i%2 == 1 {
		props = append(props, mapping.Property{ID: "00000000-0000-4000-8000-000000000002", Name: "B", Status: "inactive",
			Timezone: "UTC", CreatedAt: t0, UpdatedAt: t0})
	}
	s := upstream.SnapshotOf(props, t0.Add(time.Duration(i)*time.Minute))
	fl.walks = append(fl.walks, s)
	fl.clock.Set(s.LoadedAt)
	fl.ms[leader].load(t, s, true)
	for k, m := range fl.ms {
		if k != leader && m != skip {
			m.load(t, s, false)
		}
	}
}

// last is the newest walk's snapshot.
func (fl *trio) last() *upstream.Snapshot { return fl.walks[len(fl.walks)-1] }

// newcomer is a member started now: it has no copy of the feed.
func (fl *trio) newcomer(t *testing.T) *member {
	t.Helper()
	m := newMember(t, fl.f, fl.clock.Now)
	m.load(t, fl.last(), false)
	return m
}

// check: every member and a newcomer follow the list cursor of walk 0
// to before and more events after them, the same on all.
func (fl *trio) check(t *testing.T, before []string, more int) {
	t.Helper()
	var first []string
	for i, m := range append(slices.Clone(fl.ms), fl.newcomer(t)) {
		got := m.read(t, fl.list)
		if len(got) != len(before)+more || !slices.Equal(got[:len(before)], before) {
			t.Errorf("member %d follows the list cursor to %v; want %v and %d more", i, got, before, more)
		}
		if i == 0 {
			first = got
		} else if !slices.Equal(got, first) {
			t.Errorf("member %d: %v; member 0: %v", i, got, first)
		}
	}
	b, err := fl.store.Read(context.Background(), events.Pos{}, 100)
	if err != nil || b.Walk != fl.last().LoadedAt.UnixMilli() || b.Forged != (events.Forged{}) {
		t.Errorf("the feed after the walks: %+v %v; want the last walk, nothing forged", b, err)
	}
}

// logged fails the test unless a member logged an ERROR of cause.
func (fl *trio) logged(t *testing.T, ms []*member, cause string) {
	t.Helper()
	for _, m := range ms {
		for _, line := range strings.Split(m.log.String(), "\n") {
			if strings.Contains(line, "level=ERROR") && strings.Contains(line, "cause="+cause+" ") {
				return
			}
		}
	}
	t.Errorf("no member logged an ERROR of cause %s", cause)
}

// page is one page of m's feed.
func (m *member) page(after string, hasAfter bool, limit int) ([]string, events.Page, error) {
	b, p, err := m.feed.AppendPage(context.Background(), []byte("["), after, hasAfter, limit, viewAll{})
	if err != nil {
		return nil, p, err
	}
	var es []struct{ ID string }
	if err := json.Unmarshal(append(b, ']'), &es); err != nil {
		return nil, p, err
	}
	var ids []string
	for _, e := range es {
		ids = append(ids, e.ID)
	}
	return ids, p, nil
}

func (fl *trio) forge(t *testing.T, field, value string) {
	t.Helper()
	if err := fl.raw.HSet(context.Background(), fl.store.state, field, value).Err(); err != nil {
		t.Fatal(err)
	}
}

// A forged walk (far ahead) once stopped every later event, unlogged.
func TestForgedWalkRefused(t *testing.T) {
	scriptForms(t, func(t *testing.T, f form) {
		fl := newFleet(t, f)
		before := fl.ms[0].read(t, fl.list)
		fl.forge(t, "walk", "99999999999999")
		fl.ms[2].load(t, fl.last(), false) // a read of the shared feed
		fl.logged(t, fl.ms[2:], "state")
		fl.walk(t, 1)
		fl.walk(t, 2)
		fl.logged(t, fl.ms[1:2], "state") // the appender wrote the fields again
		fl.check(t, before, 4)
	})
}

// A forged floor (far ahead) once made every cursor 410, a fresh list's
// too; now a list cursor handed out while it is there is followed.
func TestForgedFloorRefused(t *testing.T) {
	scriptForms(t, func(t *testing.T, f form) {
		fl := newFleet(t, f)
		before := fl.ms[0].read(t, fl.list)
		fl.forge(t, "floor", "99999999999999-0")
		fl.ms[1].load(t, fl.last(), false)
		fl.logged(t, fl.ms[1:2], "state")
		fresh := fl.ms[1].feed.Next(fl.last())
		if got, _, err := fl.ms[1].page(fresh, true, 10); err != nil || len(got) != 0 {
			t.Errorf("a fresh list's cursor under a forged floor: %v %v; want no events, no error", got, err)
		}
		fl.walk(t, 0)
		for i, m := range fl.ms {
			if got := m.read(t, fresh); len(got) != 2 {
				t.Errorf("member %d after the fresh cursor: %v; want the next walk's two events", i, got)
			}
		}
		fl.check(t, before, 2)
	})
}

// A stream entry of a far-future id once refused every later XADD, even
// after it was deleted (the stream's last id stays).
func TestFarFutureStreamIDRemoved(t *testing.T) {
	scriptForms(t, func(t *testing.T, f form) {
		for _, deleted := range []bool{false, true} {
			t.Run(fmt.Sprint("deleted=", deleted), func(t *testing.T) {
				fl := newFleet(t, f)
				ctx := context.Background()
				before := fl.ms[0].read(t, fl.list)
				if err := fl.raw.XAdd(ctx, &redis.XAddArgs{Stream: fl.store.stream, ID: "99999999999999-0",
					Values: []any{"p", "00000000-0000-4000-8000-000000000001", "t", "1", "d", `{"forged":true}`}}).Err(); err != nil {
					t.Fatal(err)
				}
				if deleted {
					if err := fl.raw.XDel(ctx, fl.store.stream, "99999999999999-0").Err(); err != nil {
						t.Fatal(err)
					}
				}
				fl.walk(t, 1)
				fl.walk(t, 2)
				fl.logged(t, fl.ms[1:2], "stream")
				fl.check(t, before, 4)
				if n, err := fl.raw.XLen(ctx, fl.store.stream).Result(); err != nil || n != 8 {
					t.Errorf("stream length %d (%v); want the 8 events of the walks", n, err)
				}
			})
		}
	})
}

// A genuine entry deleted once made members disagree silently: a
// newcomer lacks it and says so at ERROR; members that read it keep it,
// and the feed goes on.
func TestDeletedEntryLogged(t *testing.T) {
	scriptForms(t, func(t *testing.T, f form) {
		fl := newFleet(t, f)
		ctx := context.Background()
		before := fl.ms[0].read(t, fl.list)
		if n, err := fl.raw.XDel(ctx, fl.store.stream, streamID(events.Pos{Walk: fl.walks[1].LoadedAt.UnixMilli(), Seq: 1})).Result(); err != nil || n != 1 {
			t.Fatalf("XDEL: %d %v", n, err)
		}
		fl.walk(t, 0)
		for i, m := range fl.ms {
			if got := m.read(t, fl.list); len(got) != 6 || !slices.Equal(got[:4], before) {
				t.Errorf("member %d, which read the entry before: %v; want %v and 2 more", i, got, before)
			}
		}
		nc := fl.newcomer(t)
		if got := nc.read(t, fl.list); len(got) != 5 || slices.Contains(got, before[1]) {
			t.Errorf("newcomer: %v; want the 6 events but the deleted one", got)
		}
		fl.logged(t, []*member{nc}, "deleted")
		if b, err := fl.store.Read(ctx, events.Pos{}, 100); err != nil || b.Forged.Deleted != 1 || len(b.Events) != 5 {
			t.Errorf("a read of the feed: %+v %v; want the gap counted", b.Forged, err)
		}
	})
}

// Redis restarted empty once made a read without after serve the event
// before the restart and skip the change between, and its next a cursor
// answered 410. The feed starts again from the walk the appender held:
// earlier cursors are expired, the list cursor of that walk is followed
// to the change, and no next handed out is refused.
func TestRedisRestartedEmpty(t *testing.T) {
	scriptForms(t, func(t *testing.T, f form) {
		fl := newFleet(t, f)
		ctx := context.Background()
		old := fl.ms[0].read(t, fl.list)
		event := strings.Fields(old[1])[1] // an event of walk 1
		kept := fl.ms[2].feed.Next(fl.last())
		if err := flushAll(ctx, fl.raw); err != nil {
			t.Fatal(err)
		}
		fl.ms[1].load(t, fl.last(), false)
		fl.walk(t, 0)
		fl.logged(t, fl.ms, "lost")
		for i, m := range append(slices.Clone(fl.ms), fl.newcomer(t)) {
			for _, c := range []string{fl.list, event} {
				if _, _, err := m.page(c, true, 10); !errors.Is(err, events.ErrCursorExpired) {
					t.Errorf("member %d, cursor %s from before the restart: %v; want expired", i, c, err)
				}
			}
			if got := m.read(t, kept); len(got) != 2 {
				t.Errorf("member %d, the list cursor of the walk before: %v; want the two changes since", i, got)
			}
			var all []string
			after, has := "", false
			for range 4 {
				ids, p, err := m.page(after, has, 1)
				if err != nil {
					t.Fatalf("member %d, a page of one after %q: %v", i, after, err)
				}
				all = append(all, ids...)
				if after, has = p.Next, true; !p.More {
					break
				}
			}
			if len(all) != 2 || slices.Contains(all, event) {
				t.Errorf("member %d without after, a page of one at a time: %v; want the two events since the restart", i, all)
			}
		}
	})
}

// flushAll empties the Redis of c, every primary of a Cluster.
func flushAll(ctx context.Context, c redis.UniversalClient) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return n.FlushAll(ctx).Err() })
	}
	return c.FlushAll(ctx).Err()
}

// Position fields signed once and written back later (a replay) would
// hide every event after them: the appender, whose walk is newer, writes
// them again as it does forged ones.
func TestReplayedStateWrittenAgain(t *testing.T) {
	scriptForms(t, func(t *testing.T, f form) {
		fl := newFleet(t, f)
		ctx := context.Background()
		saved, err := fl.raw.HGetAll(ctx, fl.store.state).Result() // after walk 2
		if err != nil {
			t.Fatal(err)
		}
		fl.walk(t, 1)
		before := fl.ms[0].read(t, fl.list)
		for k, v := range saved {
			fl.forge(t, k, v)
		}
		fl.walk(t, 2)
		fl.logged(t, fl.ms[2:], "state")
		fl.check(t, before, 2)
	})
}

// A base that does not verify, read by a member that does not hold the
// last walk: it starts the feed again from its walk (a new baseline)
// rather than make no events for good.
func TestForgedBaseStartsAgain(t *testing.T) {
	scriptForms(t, func(t *testing.T, f form) {
		fl := newFleet(t, f)
		ctx := context.Background()
		if err := fl.raw.Set(ctx, fl.store.base, "\x02"+strings.Repeat("x", 60), 0).Err(); err != nil {
			t.Fatal(err)
		}
		nc := newMember(t, f, fl.clock.Now)
		fl.ms[0] = nc // walks next without the last walk's snapshot
		fl.walk(t, 0)
		fl.logged(t, fl.ms[:1], "base")
		list := fl.ms[1].feed.Next(fl.last())
		fl.walk(t, 0)
		for i, m := range append(slices.Clone(fl.ms), fl.newcomer(t)) {
			if got := m.read(t, list); len(got) != 2 {
				t.Errorf("member %d after the new baseline: %v; want the next walk's two events", i, got)
			}
			if _, _, err := m.page(fl.list, true, 10); !errors.Is(err, events.ErrCursorExpired) {
				t.Errorf("member %d, a cursor from before the new baseline: %v; want expired", i, err)
			}
		}
	})
}

// The position fields deleted alone (the stream and the base still
// there) are forged ones, not a feed lost: written again, no cursor
// expires.
func TestDeletedStateWrittenAgain(t *testing.T) {
	scriptForms(t, func(t *testing.T, f form) {
		fl := newFleet(t, f)
		before := fl.ms[0].read(t, fl.list)
		if err := fl.raw.Del(context.Background(), fl.store.state).Err(); err != nil {
			t.Fatal(err)
		}
		nc := newMember(t, f, fl.clock.Now)
		fl.ms[1] = nc // walks next without the last walk's snapshot: it reads the base
		fl.walk(t, 1)
		fl.logged(t, fl.ms[1:2], "state")
		fl.check(t, before, 2)
	})
}

// After Redis restarted empty, a member whose base is older than the
// feed's last walk (it did not load the walk another member appended)
// does not resume the feed from it: partners listed from the later walk
// would miss a change undone between. It starts a new baseline: every
// cursor from before is expired, none is followed to a wrong copy.
func TestRedisRestartedEmptyBehindTheFeed(t *testing.T) {
	scriptForms(t, func(t *testing.T, f form) {
		fl := newFleet(t, f)
		ctx := context.Background()
		x := newMember(t, f, fl.clock.Now)
		fl.ms = append(fl.ms, x)
		fl.walk(t, 3)                          // walk 3, appended by x: its base
		fl.walkSkipping(t, 0, x)               // walk 4: x does not load it
		x.load(t, fl.walks[3], false)          // x reads the feed: its last walk is 4
		later := fl.ms[1].feed.Next(fl.last()) // a list from walk 4
		if err := flushAll(ctx, fl.raw); err != nil {
			t.Fatal(err)
		}
		fl.walk(t, 3) // walk 5 by x, after the restart
		fl.logged(t, []*member{x}, "lost")
		fl.walk(t, 0) // walk 6
		fresh := fl.ms[1].feed.Next(fl.walks[5])
		for i, m := range append(slices.Clone(fl.ms), fl.newcomer(t)) {
			for _, c := range []string{fl.list, later} {
				if _, _, err := m.page(c, true, 10); !errors.Is(err, events.ErrCursorExpired) {
					t.Errorf("member %d, cursor %s from before the restart: %v; want expired", i, c, err)
				}
			}
			if got := m.read(t, fresh); len(got) != 2 {
				t.Errorf("member %d after the new baseline: %v; want walk 6's two events", i, got)
			}
		}
	})
}

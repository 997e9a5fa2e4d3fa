package redisevents

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

var secret = []byte("a-fleet-secret-of-the-tests-0123")

var t0 = time.Date(2026, 11, 22, 9, 41, 0, 0, time.UTC)

// at is a clock stopped at t.
func at(t time.Time) func() time.Time { return func() time.Time { return t } }

// form is one Redis a test runs against: the URL or seeds of a fleet
// client, and a raw client of the same Redis for forging.
type form struct {
	cfg redisconn.Config
	raw func(t *testing.T) redis.UniversalClient
}

// eachForm runs fn on every form the fleet supports (docs/contract.md
// section 16): one primary, Sentinel, a Cluster of three primaries and a
// TLS-only server with a private CA. The forms past the first need a real
// redis-server: they fail under CI=true without one and skip otherwise.
func eachForm(t *testing.T, fn func(t *testing.T, f form)) { forms(t, fn, true) }

// scriptForms runs fn on a primary and a Cluster only: for the tests of
// what the feed's scripts and signatures decide (the forgeries), which is
// the same on every form once a form's keys, scripts and replies are
// proven by the protocol tests on each (eachForm); a Cluster stays, as the
// form where keys of one script must share a slot. A Sentinel's start
// alone takes seconds, which ten tests on it spent for nothing new.
func scriptForms(t *testing.T, fn func(t *testing.T, f form)) { forms(t, fn, false) }

func forms(t *testing.T, fn func(t *testing.T, f form), all bool) {
	t.Run("primary", func(t *testing.T) {
		srv := redistest.Start(t)
		fn(t, form{cfg: redisconn.Config{URL: srv.URL()}, raw: func(t *testing.T) redis.UniversalClient {
			return closed(t, redis.NewClient(&redis.Options{Addr: srv.Addr()}))
		}})
	})
	if testing.Short() {
		return
	}
	t.Run("sentinel", func(t *testing.T) {
		if !all {
			t.Skip("scriptForms: the Sentinel form is proven by the protocol tests")
		}
		s := redistest.StartSentinel(t)
		fn(t, form{cfg: redisconn.Config{Sentinels: s.Sentinels, Master: redistest.SentinelMaster},
			raw: func(t *testing.T) redis.UniversalClient {
				return closed(t, redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.SentinelMaster, SentinelAddrs: s.Sentinels}))
			}})
	})
	t.Run("cluster", func(t *testing.T) {
		c := redistest.StartCluster(t)
		fn(t, form{cfg: redisconn.Config{Cluster: c.Nodes}, raw: func(t *testing.T) redis.UniversalClient {
			return closed(t, redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Nodes}))
		}})
	})
	t.Run("tls", func(t *testing.T) {
		if !all {
			t.Skip("scriptForms: the TLS form is proven by the protocol tests")
		}
		s := redistest.StartTLS(t, redistest.TLSOptions{})
		tc, err := redisconn.LoadTLS(os.ReadFile, s.CA.File, s.ClientCert, s.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		fn(t, form{cfg: redisconn.Config{URL: s.URL(), TLSConfig: tc}, raw: func(t *testing.T) redis.UniversalClient {
			return closed(t, redis.NewClient(&redis.Options{Addr: s.Addr, TLSConfig: tc}))
		}})
	})
}

func closed(t *testing.T, c redis.UniversalClient) redis.UniversalClient {
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// client is one instance's guarded client of f (calls of 5 s: TLS
// handshakes under -race on a busy machine).
func (f form) client(t *testing.T) *redisconn.Client {
	t.Helper()
	cfg := f.cfg
	cfg.Guard = redisconn.GuardConfig{CallTimeout: 5 * time.Second}
	c, err := redisconn.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newStore builds a store of the test's Redis. The walks of these tests
// are fixed on t0 while the store trims by its clock: a store without the
// test's clock would trim them by the wall clock, and the tests would pass
// or fail by the day they run (docs/testing.md, "Time in tests").
func newStore(t *testing.T, c *redisconn.Client, cfg Config) *Store {
	t.Helper()
	if cfg.Now == nil {
		t.Fatal("newStore: give the store the test's clock (Config.Now)")
	}
	cfg.Client, cfg.Brand, cfg.Mode = c, "aurora", "live"
	if cfg.Secret == nil {
		cfg.Secret = secret
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func item(n int, name string) *upstream.Item {
	return upstream.NewItem(mapping.Property{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n), Name: name,
		Status: "active", Timezone: "Europe/Paris", CreatedAt: t0, UpdatedAt: t0})
}

func snapOf(items ...*upstream.Item) *upstream.Snapshot { return upstream.NewSnapshot(items, t0) }

// sameItem reports whether s holds it, with the same JSON.
func sameItem(s *upstream.Snapshot, it *upstream.Item) bool {
	got, ok := s.Get(it.ID)
	return ok && string(got.JSON) == string(it.JSON)
}

// The store's protocol on each form: the first walk starts the feed (its
// floor the end of that walk, no events); a walk after prev appends its
// changes under ids walk-index, signed; a walk whose prev is not the
// feed's last, or not newer, writes nothing; the base comes back as it
// was written, and only when asked for another walk than the one held.
func TestStoreProtocol(t *testing.T) { eachForm(t, testProtocol) }

func testProtocol(t *testing.T, f form) {
	{
		ctx := context.Background()
		s := newStore(t, f.client(t), Config{Now: at(t0)})
		w0, w1 := t0.UnixMilli(), t0.Add(time.Minute).UnixMilli()
		base := []*upstream.Item{item(1, "A"), item(2, "B")}
		if _, err := s.Append(ctx, events.Walk{At: w0, Snapshot: snapOf(base...)}); err != nil {
			t.Fatalf("first walk: %v", err)
		}
		b, err := s.Read(ctx, events.Pos{}, 10)
		if err != nil || b.Walk != w0 || b.Floor != events.EndOf(w0) || len(b.Events) != 0 {
			t.Fatalf("after the first walk: %+v %v", b, err)
		}
		next := []*upstream.Item{item(1, "A1"), item(3, "C")}
		changes := []events.Change{{Type: events.Updated, Item: next[0]}, {Type: events.Removed, Item: base[1]}, {Type: events.Created, Item: next[1]}}
		if _, err := s.Append(ctx, events.Walk{Prev: w0, At: w1, Changes: changes, Snapshot: snapOf(next...)}); err != nil {
			t.Fatalf("second walk: %v", err)
		}
		for _, w := range []events.Walk{{Prev: w0, At: w1 + 1}, {Prev: w1, At: w1}, {At: w1 + 2}} {
			if _, err := s.Append(ctx, w); !errors.Is(err, events.ErrConflict) {
				t.Errorf("append %+v: %v; want ErrConflict", w, err)
			}
		}
		b, err = s.Read(ctx, events.EndOf(w0), 10)
		if err != nil || b.Walk != w1 || len(b.Events) != 3 || b.Forged != (events.Forged{}) {
			t.Fatalf("read: %+v %v", b, err)
		}
		for i, e := range b.Events {
			if e.Pos != (events.Pos{Walk: w1, Seq: uint32(i)}) || e.Type != changes[i].Type ||
				e.Prop != changes[i].Item.ID || string(e.Data) != string(changes[i].Item.JSON) {
				t.Errorf("event %d: %+v; want %+v", i, e, changes[i])
			}
		}
		if b, _ := s.Read(ctx, events.Pos{Walk: w1, Seq: 0}, 1); len(b.Events) != 1 || b.Events[0].Pos.Seq != 1 || !b.Full {
			t.Errorf("read after the first event, one: %+v", b)
		}
		walk, items, err := s.Base(ctx, w0)
		if err != nil || walk != w1 || items.Len() != 2 || !sameItem(items, next[0]) || !sameItem(items, next[1]) {
			t.Fatalf("base: %d %v %v", walk, items, err)
		}
		if walk, items, err := s.Base(ctx, w1); err != nil || walk != w1 || items != nil {
			t.Errorf("base held already: %d %v %v", walk, items, err)
		}
	}
}

// Bounds: EDGE_EVENTS_MAX trims the stream and raises the floor to the
// last event dropped; retention does the same by time.
func TestStoreBounds(t *testing.T) { eachForm(t, testBounds) }

func testBounds(t *testing.T, f form) {
	{
		ctx := context.Background()
		now := t0
		s := newStore(t, f.client(t), Config{Max: 2, Retention: time.Hour, Now: func() time.Time { return now }})
		prev := int64(0)
		for i := range 4 {
			w := t0.Add(time.Duration(i) * time.Minute).UnixMilli()
			it := item(1, fmt.Sprint("A", i))
			var ch []events.Change
			if prev != 0 {
				ch = []events.Change{{Type: events.Updated, Item: it}}
			}
			if _, err := s.Append(ctx, events.Walk{Prev: prev, At: w, Changes: ch, Snapshot: snapOf(it)}); err != nil {
				t.Fatal(err)
			}
			prev = w
		}
		b, err := s.Read(ctx, events.Pos{}, 10)
		if err != nil || len(b.Events) != 2 || b.Floor != (events.Pos{Walk: t0.Add(time.Minute).UnixMilli()}) {
			t.Fatalf("max 2: %+v %v; want two events, the floor at the first dropped", b, err)
		}
		now = t0.Add(time.Hour + 150*time.Second) // the event of minute 2 is past retention
		w := t0.Add(time.Hour + 3*time.Minute).UnixMilli()
		if _, err := s.Append(ctx, events.Walk{Prev: prev, At: w, Snapshot: snapOf(item(1, "A3"))}); err != nil {
			t.Fatal(err)
		}
		if b, _ := s.Read(ctx, events.Pos{}, 10); len(b.Events) != 1 || b.Floor != (events.Pos{Walk: t0.Add(2 * time.Minute).UnixMilli()}) {
			t.Errorf("retention: %+v; want the event of minute 3 alone, the floor at minute 2's", b)
		}
	}
}

// What is written without the fleet's secret is never served: a forged
// event past the feed's last is never read, and the next append removes
// it; a forged base is refused.
func TestStoreRefusesForgeries(t *testing.T) { eachForm(t, testForgeries) }

func testForgeries(t *testing.T, f form) {
	{
		ctx := context.Background()
		c := f.client(t)
		s := newStore(t, c, Config{Now: at(t0)})
		w0 := t0.UnixMilli()
		if _, err := s.Append(ctx, events.Walk{At: w0, Snapshot: snapOf(item(1, "A"))}); err != nil {
			t.Fatal(err)
		}
		raw := f.raw(t)
		id := fmt.Sprintf("%d-0", w0+1)
		if err := raw.XAdd(ctx, &redis.XAddArgs{Stream: s.stream, ID: id,
			Values: []any{"p", "00000000-0000-4000-8000-000000000001", "t", "1", "d", `{"forged":true}`, "m", "0123456789abcdef"}}).Err(); err != nil {
			t.Fatal(err)
		}
		b, err := s.Read(ctx, events.EndOf(w0), 10)
		if err != nil || len(b.Events) != 0 || b.Forged != (events.Forged{}) || b.Through != (events.Pos{}) {
			t.Errorf("forged event past the feed's last: %+v %v; want it never read", b, err)
		}
		fg, err := s.Append(ctx, events.Walk{Prev: w0, At: w0 + 2, Snapshot: snapOf(item(1, "A"))})
		if err != nil || fg.Stream != 1 {
			t.Errorf("append after the forged event: %+v %v; want it removed", fg, err)
		}
		if n, err := raw.XLen(ctx, s.stream).Result(); err != nil || n != 0 {
			t.Errorf("stream length %d (%v) after the append; want the forged event gone", n, err)
		}
		other := newStore(t, c, Config{Secret: []byte("another-secret-of-another-fleet!"), Now: at(t0)})
		if _, _, err := other.Base(ctx, 0); !errors.Is(err, errBadBase) {
			t.Errorf("base under another secret: %v; want errBadBase", err)
		}
		if err := raw.Set(ctx, s.base, "\x01"+strings.Repeat("x", 40), 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Base(ctx, 0); !errors.Is(err, errBadBase) {
			t.Errorf("forged base: %v; want errBadBase", err)
		}
	}
}

// MaxBytes bounds the stream by bytes as memory is bounded: the oldest
// events go first, the bound held to one event, and the floor rises to
// the last one dropped.
func TestStoreBoundByBytes(t *testing.T) { eachForm(t, testBoundByBytes) }

func testBoundByBytes(t *testing.T, f form) {
	{
		ctx := context.Background()
		size := int64(len(item(1, "A0").ID) + 1 + len(item(1, "A0").JSON) + entryOverhead) // one event's bytes as counted
		s := newStore(t, f.client(t), Config{MaxBytes: 2*size + size/2, Now: at(t0.Add(time.Hour))})
		prev := int64(0)
		var walks []int64
		for i := range 6 {
			w := t0.Add(time.Duration(i) * time.Minute).UnixMilli()
			it := item(1, fmt.Sprint("A", i))
			var ch []events.Change
			if prev != 0 {
				ch = []events.Change{{Type: events.Updated, Item: it}}
			}
			if _, err := s.Append(ctx, events.Walk{Prev: prev, At: w, Changes: ch, Snapshot: snapOf(it)}); err != nil {
				t.Fatal(err)
			}
			prev, walks = w, append(walks, w)
		}
		b, err := s.Read(ctx, events.Pos{}, 10)
		if err != nil || len(b.Events) != 3 || b.Events[0].Pos.Walk != walks[3] || b.Floor != (events.Pos{Walk: walks[2]}) {
			t.Fatalf("bytes bound of two and a half events: %+v %v; want the three newest (the bound held to one event), the floor at the last dropped", b, err)
		}
		if b.Forged != (events.Forged{}) {
			t.Errorf("trimmed events taken for deleted ones: %+v", b.Forged)
		}
	}
}

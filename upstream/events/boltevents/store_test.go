package boltevents

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
)

var t0 = time.Date(2026, 11, 22, 9, 41, 0, 0, time.UTC)

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func prop(n int, name, status string) mapping.Property {
	return mapping.Property{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", n), Name: name, Status: status,
		Timezone: "Europe/Paris", CreatedAt: t0, UpdatedAt: t0}
}

// walk is a snapshot of props at t0 plus k minutes.
func walk(k int, props ...mapping.Property) *upstream.Snapshot {
	return upstream.SnapshotOf(props, t0.Add(time.Duration(k)*time.Minute))
}

// edge is one run of a single edge: its file and the feed on it.
type edge struct {
	db   *DB
	feed *events.Feed
}

// start opens dir as an edge starting does, the clock at c.
func start(t *testing.T, dir string, c *clock, cfg Config) *edge {
	t.Helper()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Mode, cfg.Brand, cfg.Now = "live", "aurora", c.Now
	st, err := db.Feed(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := events.New(events.Config{Mode: "live", Shared: st, Now: c.Now, Retention: cfg.Retention, Max: cfg.Max})
	if err != nil {
		t.Fatal(err)
	}
	e := &edge{db: db, feed: f}
	t.Cleanup(e.stop)
	return e
}

// stop closes the feed and the file (again: nothing).
func (e *edge) stop() {
	if e.db == nil {
		return
	}
	e.feed.Close()
	_ = e.db.Close()
	e.db = nil
}

// walks the feed observe s as a walk that took took.
func (e *edge) walks(t *testing.T, c *clock, s *upstream.Snapshot) {
	t.Helper()
	c.now = s.LoadedAt
	load := e.feed.Watch(func(context.Context) (*upstream.Snapshot, error) {
		c.now = c.now.Add(3 * time.Second) // the walk's length
		return s, nil
	})
	if _, err := load(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// read is every event after after, as a partner pages through them: the
// raw JSON of each and the cursor reached.
func (e *edge) read(t *testing.T, after string) ([]string, string, error) {
	t.Helper()
	var out []string
	for {
		b, p, err := e.feed.AppendPage(context.Background(), nil, after, after != "", 3, all{})
		if err != nil {
			return out, after, err
		}
		if len(b) > 0 {
			out = append(out, string(b))
		}
		after = p.Next
		if !p.More {
			return out, after, nil
		}
	}
}

type all struct{}

func (all) AllProperties() bool   { return true }
func (all) CanSee(id string) bool { return true }

// docs/contract.md section 25: after a restart, cursors from before keep
// working (same ids, same events), the first walk is diffed against the
// stored base (a change made while the edge was down is an event), and the
// last walk's length is known before the first walk.
func TestRestartKeepsTheFeed(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t0}
	a, b, d := prop(1, "A", "active"), prop(2, "B", "active"), prop(3, "C", "active")
	e := start(t, dir, c, Config{})
	e.walks(t, c, walk(0, a, b))
	listed := e.feed.Next(walk(0)) // a list answer served from the baseline
	e.walks(t, c, walk(1, a, prop(2, "B2", "active"), d))
	e.walks(t, c, walk(2, a, prop(2, "B2", "inactive"), d))
	before, _, err := e.read(t, listed)
	if err != nil || len(before) == 0 {
		t.Fatalf("before the restart: %v %v", before, err)
	}
	mid, _, _ := e.read(t, "")
	midCursor := cursorOf(t, mid[0]) // the first event's id: a cursor inside the feed
	e.stop()

	e = start(t, dir, c, Config{})
	if got := e.feed.LastWalk(); got != 3*time.Second {
		t.Errorf("LastWalk after the restart = %v; want the stored 3s", got)
	}
	after, end, err := e.read(t, listed)
	if err != nil || !slices.Equal(after, before) {
		t.Fatalf("the list's cursor after the restart: %v %v\nwant %v", after, err, before)
	}
	if _, _, err := e.read(t, midCursor); err != nil {
		t.Errorf("an event's id after the restart: %v", err)
	}
	// C removed while the edge was down: the first walk's event.
	e.walks(t, c, walk(10, a, prop(2, "B2", "inactive")))
	news, _, err := e.read(t, end)
	if err != nil || len(news) != 1 || !strings.Contains(news[0], `"property.removed"`) || !strings.Contains(news[0], d.ID) {
		t.Fatalf("the change made while the edge was down: %v %v; want C removed", news, err)
	}
}

// cursorOf is the id of the first event in a page's JSON.
func cursorOf(t *testing.T, page string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, `"id":"`)
	id, _, ok2 := strings.Cut(rest, `"`)
	if !ok || !ok2 {
		t.Fatalf("no id in %s", page)
	}
	return id
}

// A crash while a walk is written (the last transaction's meta page torn,
// as a kill -9 or a power cut halfway through its write leaves it) loses
// that walk only: the file opens on the walk before, whole, and the next
// walk is diffed against that walk's base, so no change is lost.
func TestTornWalkLeavesTheEarlierWalks(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t0}
	a := prop(1, "A", "active")
	e := start(t, dir, c, Config{})
	e.walks(t, c, walk(0, a))
	e.walks(t, c, walk(1, prop(1, "A1", "active")))
	kept, end, err := e.read(t, "")
	if err != nil || len(kept) != 1 {
		t.Fatalf("%v %v", kept, err)
	}
	e.walks(t, c, walk(2, prop(1, "A2", "active"))) // torn below
	e.stop()
	tearLastMeta(t, filepath.Join(dir, FileName))

	e = start(t, dir, c, Config{})
	got, end2, err := e.read(t, "")
	if err != nil || !slices.Equal(got, kept) || end2 != end {
		t.Fatalf("after the torn walk: %v %v %v; want the walks before it, %v", got, end2, err, kept)
	}
	e.walks(t, c, walk(3, prop(1, "A3", "active")))
	news, _, err := e.read(t, end)
	if err != nil || len(news) != 1 || !strings.Contains(news[0], `"A3"`) {
		t.Fatalf("the walk after the crash: %v %v", news, err)
	}
}

// A transaction abandoned before its commit (the process gone while it
// wrote) leaves nothing behind.
func TestAbandonedTransactionLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t0}
	e := start(t, dir, c, Config{})
	e.walks(t, c, walk(0, prop(1, "A", "active")))
	e.walks(t, c, walk(1, prop(1, "A1", "active")))
	kept, _, _ := e.read(t, "")
	tx, err := e.db.bolt.Begin(true)
	if err != nil {
		t.Fatal(err)
	}
	b := tx.Bucket([]byte("feed:aurora:live"))
	if err := b.Put(keyWalk, be64(1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Bucket(keyEvents).Put(walkKey(t0.Add(time.Hour).UnixMilli()), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback()
	e.stop()
	e = start(t, dir, c, Config{})
	if got, _, err := e.read(t, ""); err != nil || !slices.Equal(got, kept) {
		t.Fatalf("after an abandoned transaction: %v %v; want %v", got, err, kept)
	}
}

// tearLastMeta damages the meta page of the file's last transaction, as a
// write cut short leaves it: bbolt then opens on the one before.
func tearLastMeta(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var head [80]byte
	if _, err := f.ReadAt(head[:], 0); err != nil {
		t.Fatal(err)
	}
	// A page's header is 16 bytes; the meta's page size follows its magic
	// and version, its transaction id is at byte 64 of the page.
	pageSize := int64(binary.LittleEndian.Uint32(head[24:28]))
	var txid [2]uint64
	for i := range txid {
		var b [8]byte
		if _, err := f.ReadAt(b[:], int64(i)*pageSize+64); err != nil {
			t.Fatal(err)
		}
		txid[i] = binary.LittleEndian.Uint64(b[:])
	}
	last := int64(0)
	if txid[1] > txid[0] {
		last = 1
	}
	if _, err := f.WriteAt([]byte{0xde, 0xad, 0xbe, 0xef}, last*pageSize+40); err != nil {
		t.Fatal(err)
	}
}

// The file keeps what EDGE_EVENTS_MAX_BYTES and EDGE_EVENTS_MAX allow, the
// oldest walks going first: after a restart a cursor before them is 410,
// the newest are served.
func TestFileBounds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxBytes int64
		max      int
	}{
		{"bytes", 1, 0},
		{"count", 0, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := &clock{t0}
			e := start(t, dir, c, Config{})
			props := []mapping.Property{prop(1, "A", "active"), prop(2, "B", "active")}
			e.walks(t, c, walk(0, props...))
			first := e.feed.Next(walk(0))
			e.stop()
			for k := 1; k <= 4; k++ {
				e = start(t, dir, c, Config{MaxBytes: tc.maxBytes, Max: tc.max})
				props[0].Name, props[1].Name = fmt.Sprint("A", k), fmt.Sprint("B", k)
				e.walks(t, c, walk(k, props...))
				e.stop()
			}
			e = start(t, dir, c, Config{MaxBytes: tc.maxBytes, Max: tc.max})
			if _, _, err := e.read(t, first); !errors.Is(err, events.ErrCursorExpired) {
				t.Errorf("a cursor before the dropped walks: %v; want ErrCursorExpired", err)
			}
			got, _, err := e.read(t, "")
			if err != nil {
				t.Fatal(err)
			}
			all := strings.Join(got, ",")
			if n := strings.Count(all, `"object":"event"`); n > 3 {
				t.Errorf("kept %d events; want at most 3 (two a walk, oldest walks gone)", n)
			}
			if tc.name == "count" && !strings.Contains(all, `"A4"`) {
				t.Errorf("the newest walk is gone: %s", all)
			}
		})
	}
}

// Retention: a walk older than EDGE_EVENTS_RETENTION is dropped at the
// next append, the floor past it.
func TestFileRetention(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t0}
	e := start(t, dir, c, Config{Retention: time.Hour})
	e.walks(t, c, walk(0, prop(1, "A", "active")))
	e.walks(t, c, walk(1, prop(1, "A1", "active")))
	e.walks(t, c, walk(120, prop(1, "A2", "active")))
	st, _ := e.db.Feed(Config{Brand: "aurora", Mode: "live", Now: c.Now})
	bt, err := st.Read(context.Background(), events.Pos{}, 100)
	if err != nil || len(bt.Events) != 1 || bt.Floor != events.EndOf(walk(1).LoadedAt.UnixMilli()) {
		t.Fatalf("read %+v %v; want the last walk's one event, the floor past the walk before", bt, err)
	}
}

// docs/operations.md, EDGE_DATA_DIR: a data directory that cannot be used
// is refused, saying why; one edge per directory.
func TestDataDirRefused(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
	if _, err := Open(filepath.Join(file, "sub")); err == nil {
		t.Error("a directory under a file: opened")
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(ro); err == nil || !strings.Contains(err.Error(), "not writable") {
			t.Errorf("a read-only directory: %v", err)
		}
	}
	wide := filepath.Join(dir, "wide")
	if err := os.Mkdir(wide, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := CheckDir(wide); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(wide); st.Mode().Perm() != 0o700 {
		t.Errorf("a directory of the edge's user open to others is left %v; want 0700", st.Mode().Perm())
	}
	db, err := Open(filepath.Join(dir, "new"))
	if err != nil {
		t.Fatalf("a missing directory is created: %v", err)
	}
	defer db.Close()
	for _, p := range []string{filepath.Join(dir, "new"), db.Path()} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: %v %v; want private to the edge's user", p, st.Mode(), err)
		}
	}
	if _, err := Open(filepath.Join(dir, "new")); err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Errorf("a second edge on the same directory: %v", err)
	}
}

// failingOnce is the store with its next Append failing (a full disk).
type failingOnce struct {
	*Store
	fail bool
}

func (f *failingOnce) Append(ctx context.Context, w events.Walk) (events.Forged, error) {
	if f.fail {
		f.fail = false
		return events.Forged{}, errors.New("no space left on device")
	}
	return f.Store.Append(ctx, w)
}

// A walk the file cannot take (a full disk) makes no events, in memory
// either: the next walk is diffed against the last one stored, so its
// events carry the change, and memory and file never disagree.
func TestFailedWriteLosesNoChange(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t0}
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := db.Feed(Config{Brand: "aurora", Mode: "live", Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	store := &failingOnce{Store: st}
	f, err := events.New(events.Config{Mode: "live", Shared: store, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	e := &edge{db: db, feed: f}
	t.Cleanup(e.stop)
	e.walks(t, c, walk(0, prop(1, "A", "active"), prop(2, "B", "active")))
	e.walks(t, c, walk(1, prop(1, "A1", "active"), prop(2, "B", "active")))
	store.fail = true
	e.walks(t, c, walk(2, prop(1, "A1", "active"), prop(2, "B2", "active")))
	e.walks(t, c, walk(3, prop(1, "A1", "active"), prop(2, "B2", "active"), prop(3, "C", "active")))
	got, _, err := e.read(t, "")
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(got, ",")
	if strings.Count(all, `"object":"event"`) != 3 || !strings.Contains(all, `"B2"`) || !strings.Contains(all, `"A1"`) {
		t.Fatalf("events %s; want A1, then B2 and C from the walk after the failed one", all)
	}
	e.stop()
	e = start(t, dir, c, Config{})
	if again, _, err := e.read(t, ""); err != nil || !slices.Equal(again, got) {
		t.Errorf("the file after a restart: %v %v; want what memory served, %v", again, err, got)
	}
}

// A read after the last event held inflates nothing: the feed's reads
// while partners poll cost a lookup, not a walk's worth of work.
func TestReadAtTheEndInflatesNothing(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t0}
	e := start(t, dir, c, Config{})
	e.walks(t, c, walk(0, prop(1, "A", "active"), prop(2, "B", "active")))
	e.walks(t, c, walk(1, prop(1, "A1", "active"), prop(2, "B1", "active")))
	st, err := e.db.Feed(Config{Brand: "aurora", Mode: "live", Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	last := events.Pos{Walk: walk(1).LoadedAt.UnixMilli(), Seq: 1}
	if bt, err := st.Read(ctx, events.Pos{Walk: last.Walk}, 10); err != nil || len(bt.Events) != 1 {
		t.Fatalf("after the walk's first event: %+v %v; want its second", bt, err)
	}
	for _, after := range []events.Pos{last, events.EndOf(last.Walk)} {
		allocs := testing.AllocsPerRun(20, func() { _, _ = st.Read(ctx, after, 10) })
		if allocs > 15 { // a bbolt read transaction: 11
			t.Errorf("a read after %v allocates %v times: it inflated a walk", after, allocs)
		}
	}
}

// A base that does not decode (a disk fault) does not stop the feed: the
// next walk starts it again, earlier cursors answer ErrCursorExpired (the
// changes since the last good walk are unknown), later ones work, and a
// read from the start serves nothing from before it.
func TestDamagedBaseStartsTheFeedAgain(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t0}
	e := start(t, dir, c, Config{})
	e.walks(t, c, walk(0, prop(1, "A", "active")))
	e.walks(t, c, walk(1, prop(1, "A1", "active")))
	_, end, _ := e.read(t, "")
	e.stop()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = db.bolt.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("feed:aurora:live"))
		v := slices.Clone(b.Get(keyBase))
		v[len(v)-3] ^= 0xff
		return b.Put(keyBase, v)
	})
	_ = db.Close()
	if err != nil {
		t.Fatal(err)
	}

	e = start(t, dir, c, Config{})
	e.walks(t, c, walk(2, prop(1, "A2", "active")))
	if _, _, err := e.read(t, end); !errors.Is(err, events.ErrCursorExpired) {
		t.Errorf("a cursor from before the damaged base: %v; want ErrCursorExpired", err)
	}
	if got, _, err := e.read(t, ""); err != nil || len(got) != 0 {
		t.Errorf("from the start after the feed started again: %v %v; want nothing", got, err)
	}
	restarted := e.feed.Next(walk(2))
	e.walks(t, c, walk(3, prop(1, "A3", "active")))
	if got, _, err := e.read(t, restarted); err != nil || len(got) != 1 || !strings.Contains(got[0], `"A3"`) {
		t.Errorf("the walk after: %v %v; want A3", got, err)
	}
}

// docs/operations.md, "Sizing the feed": the file holds what the feed in
// memory holds and no more. Memory's byte bound (EDGE_EVENTS_MAX_BYTES as
// the heap counts it) drops events long before the file's (its compressed
// bytes) would, and the walks memory dropped stay out of the file, whose
// mapped pages would otherwise grow the edge's RSS to the file's size;
// after a restart a cursor that was 410 is 410 still.
func TestFileHoldsWhatMemoryHolds(t *testing.T) {
	dir := t.TempDir()
	c := &clock{t0}
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := db.Feed(Config{Mode: "live", Brand: "aurora", Now: c.Now}) // the file's default bounds
	if err != nil {
		t.Fatal(err)
	}
	small := events.Config{Mode: "live", Shared: st, Now: c.Now, MaxBytes: 1} // memory keeps no event a walk later
	f, err := events.New(small)
	if err != nil {
		t.Fatal(err)
	}
	e := &edge{db: db, feed: f}
	t.Cleanup(e.stop)
	props := []mapping.Property{prop(1, "A", "active"), prop(2, "B", "active")}
	e.walks(t, c, walk(0, props...))
	first := e.feed.Next(walk(0))
	for k := 1; k <= 4; k++ {
		props[0].Name, props[1].Name = fmt.Sprint("A", k), fmt.Sprint("B", k)
		e.walks(t, c, walk(k, props...))
	}
	if _, _, err := e.read(t, first); !errors.Is(err, events.ErrCursorExpired) {
		t.Fatalf("before the restart, a cursor memory dropped: %v; want ErrCursorExpired", err)
	}
	bt, err := st.Read(context.Background(), events.Pos{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var walks []int64
	for _, ev := range bt.Events {
		if !slices.Contains(walks, ev.Pos.Walk) {
			walks = append(walks, ev.Pos.Walk)
		}
	}
	if want := []int64{walk(4).LoadedAt.UnixMilli()}; !slices.Equal(walks, want) {
		t.Errorf("the file holds the events of walks %v; want only the last, %v (memory held no other when it was written)", walks, want)
	}
	e.stop()
	e = start(t, dir, c, Config{})
	if _, _, err := e.read(t, first); !errors.Is(err, events.ErrCursorExpired) {
		t.Errorf("after the restart, a cursor that was 410: %v; want ErrCursorExpired", err)
	}
}

package boltevents

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
)

// Config is one PMS's feed in the file.
type Config struct {
	Brand, Mode string // name the feed's bucket; Mode is required
	// Retention, Max and MaxBytes bound what the file keeps as
	// events.Config's bound the memory (EDGE_EVENTS_RETENTION,
	// EDGE_EVENTS_MAX, EDGE_EVENTS_MAX_BYTES: MaxBytes counts the stored,
	// compressed bytes); the oldest walks go first, whole. Zero or less:
	// their defaults.
	Retention time.Duration
	Max       int
	MaxBytes  int64
	// Now is the clock of retention; nil: time.Now.
	Now func() time.Time
}

// Store is one PMS's feed in the file: events.Shared, for one edge.
type Store struct {
	db   *bolt.DB
	cfg  Config
	name []byte
	took atomic.Int64 // the last walk's length (ns), as stored
}

var _ events.SoleWriter = (*Store)(nil)

// SoleWriter marks the store as one only this process appends to (Open
// locks the file): the feed keeps what it appends without reading it back.
func (s *Store) SoleWriter() {}

// The feed's bucket holds these keys, and the bucket of its walks'
// events (keyed by the walk, big-endian Unix ms).
var (
	keyWalk   = []byte("walk")   // the last walk appended (8 bytes); absent: no feed yet
	keyFloor  = []byte("floor")  // a cursor before it is 410 (12 bytes: walk, sequence)
	keyBytes  = []byte("bytes")  // the stored bytes of the events held (8)
	keyCount  = []byte("count")  // the events held (8)
	keyTook   = []byte("took")   // the last walk's length (8, ns)
	keyBase   = []byte("base")   // the last walk's properties (codec.go)
	keyEvents = []byte("events") // the bucket of walks
	// keySpans is the bucket of the walks' spans, keyed as the walks
	// (events.AppendSpan, 25 bytes): one per walk kept with a span, beside
	// its events, so that a file without it (an older build's) reads as
	// walks without spans, and an older build reads this one. Not counted
	// in keyBytes (33 bytes a walk).
	keySpans = []byte("spans")
)

// Feed returns the store of cfg's PMS in the file.
func (d *DB) Feed(cfg Config) (*Store, error) {
	if cfg.Mode == "" {
		return nil, errors.New("boltevents: the feed needs its mode")
	}
	cfg.Retention = cmp.Or(max(cfg.Retention, 0), events.DefaultRetention)
	cfg.Max = cmp.Or(max(cfg.Max, 0), events.DefaultMax)
	cfg.MaxBytes = cmp.Or(max(cfg.MaxBytes, 0), events.DefaultMaxBytes)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Store{db: d.bolt, cfg: cfg, name: []byte("feed:" + cfg.Brand + ":" + cfg.Mode)}
	err := d.bolt.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(s.name); b != nil {
			s.took.Store(int64(u64(b.Get(keyTook))))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// LastWalk is the length of the last walk appended, kept across restarts
// (events.Feed.LastWalk); zero: none known.
func (s *Store) LastWalk() time.Duration { return time.Duration(s.took.Load()) }

// Append is events.Shared's: one transaction writes the walk's events, the
// new base (unless nothing changed), the trimmed bounds and the walk. The
// file is this process's alone (one edge per directory), so nothing in it
// is forged: it reports no forgery.
func (s *Store) Append(_ context.Context, w events.Walk) (events.Forged, error) {
	return events.Forged{}, s.append(w)
}

// append writes w in one transaction.
func (s *Store) append(w events.Walk) error {
	var walkVal, baseVal []byte
	var err error
	if len(w.Changes) > 0 {
		if walkVal, err = encodeWalk(w.Changes); err != nil {
			return err
		}
	}
	if w.Prev == 0 || len(w.Changes) > 0 {
		if baseVal, err = encodeBase(w.Snapshot); err != nil {
			return err
		}
	}
	cut := s.cfg.Now().Add(-s.cfg.Retention).UnixMilli()
	err = s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(s.name)
		if err != nil {
			return err
		}
		cur := int64(u64(b.Get(keyWalk)))
		if cur != 0 && w.Prev == 0 && w.At > cur && damaged(b.Get(keyBase)) {
			cur = 0 // Base said there is none: this walk starts the feed again
		}
		if cur != w.Prev || w.At <= cur {
			return events.ErrConflict
		}
		floor, size, count := pos(b.Get(keyFloor)), int64(u64(b.Get(keyBytes))), int64(u64(b.Get(keyCount)))
		if cur == 0 { // a new feed: nothing before it is kept
			for _, name := range [][]byte{keyEvents, keySpans} {
				if b.Bucket(name) != nil {
					if err := b.DeleteBucket(name); err != nil {
						return err
					}
				}
			}
			floor, size, count = events.EndOf(w.At), 0, 0
		}
		if w.Floor.Compare(floor) > 0 {
			// The copy in memory serves nothing before its floor (its own
			// bounds, which drop events long before the file's would): nor
			// does the file, which then holds what memory does and no more
			// (docs/operations.md, "Sizing the feed").
			floor = w.Floor
		}
		evs, err := b.CreateBucketIfNotExists(keyEvents)
		if err != nil {
			return err
		}
		if walkVal != nil {
			k := walkKey(w.At)
			if err := evs.Put(k, walkVal); err != nil {
				return err
			}
			size += int64(len(k) + len(walkVal))
			count += int64(len(w.Changes))
			if err := putSpan(b, k, w.Span); err != nil {
				return err
			}
		}
		if floor, size, count, err = s.trim(evs, floor, size, count, cut); err != nil {
			return err
		}
		if err := dropSpans(b, evs); err != nil {
			return err
		}
		if baseVal != nil {
			if err := b.Put(keyBase, baseVal); err != nil {
				return err
			}
		}
		puts := [][2][]byte{{keyWalk, be64(uint64(w.At))}, {keyFloor, posBytes(floor)},
			{keyBytes, be64(uint64(size))}, {keyCount, be64(uint64(count))}}
		if w.Took > 0 {
			puts = append(puts, [2][]byte{keyTook, be64(uint64(w.Took))})
		}
		for _, kv := range puts {
			if err := b.Put(kv[0], kv[1]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if w.Took > 0 {
		s.took.Store(int64(w.Took))
	}
	return nil
}

// trim drops the oldest walks, whole, while one is past retention (older
// than cut), wholly at or below the floor, or the events held are over Max
// or MaxBytes, raising the floor past each; it returns the new floor,
// bytes and count.
func (s *Store) trim(evs *bolt.Bucket, floor events.Pos, size, count, cut int64) (events.Pos, int64, int64, error) {
	c := evs.Cursor()
	for k, v := c.First(); k != nil; k, v = c.First() {
		walk := int64(binary.BigEndian.Uint64(k))
		n, err := walkCount(v)
		last := events.EndOf(walk) // its last event, or past it when unknown
		if err == nil {
			last = events.Pos{Walk: walk, Seq: uint32(max(n-1, 0))}
		}
		if walk >= cut && count <= int64(s.cfg.Max) && size <= s.cfg.MaxBytes && last.Compare(floor) > 0 {
			break
		}
		if err != nil {
			return floor, size, count, fmt.Errorf("boltevents: walk %d: %w", walk, err)
		}
		if end := events.EndOf(walk); floor.Compare(end) < 0 {
			floor = end
		}
		size -= int64(len(k) + len(v))
		count -= int64(n)
		if err := c.Delete(); err != nil {
			return floor, size, count, err
		}
	}
	return floor, max(size, 0), max(count, 0), nil
}

// putSpan keeps sc, the span of the walk keyed k, in the feed's bucket b
// (none: a span an older build left at that key goes).
func putSpan(b *bolt.Bucket, k []byte, sc trace.SpanContext) error {
	if !sc.IsValid() {
		if sp := b.Bucket(keySpans); sp != nil {
			return sp.Delete(k)
		}
		return nil
	}
	sp, err := b.CreateBucketIfNotExists(keySpans)
	if err != nil {
		return err
	}
	return sp.Put(k, events.AppendSpan(make([]byte, 0, events.SpanLen), sc))
}

// dropSpans deletes the spans of walks older than the oldest kept in evs
// (all of them when none is): those trim dropped, and any an older build
// left when it trimmed.
func dropSpans(b, evs *bolt.Bucket) error {
	sp := b.Bucket(keySpans)
	if sp == nil {
		return nil
	}
	first, _ := evs.Cursor().First()
	c := sp.Cursor()
	for k, _ := c.First(); k != nil && (first == nil || bytes.Compare(k, first) < 0); k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// Base is events.Shared's.
func (s *Store) Base(_ context.Context, have int64) (int64, *upstream.Snapshot, error) {
	var walk int64
	var items []*upstream.Item
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(s.name)
		if b == nil {
			return nil
		}
		walk = int64(u64(b.Get(keyWalk)))
		if walk == 0 || walk == have {
			return nil
		}
		var err error
		if items, err = decodeBase(b.Get(keyBase)); err != nil { // inflated: nothing points into the file
			// A base that does not decode (a disk fault; a crash never
			// leaves one) would stop every later walk: the feed starts
			// again from the next walk, its cursors before it 410.
			walk = 0
		}
		return nil
	})
	if err != nil || walk == 0 || walk == have {
		return walk, nil, err
	}
	return walk, upstream.NewSnapshot(items, time.UnixMilli(walk)), nil
}

// damaged reports whether the base's value does not decode.
func damaged(v []byte) bool {
	_, err := decodeBase(v)
	return err != nil
}

// Read is events.Shared's. It reads whole walks: a read may return more
// than n events (the rest of the last walk it started).
func (s *Store) Read(_ context.Context, after events.Pos, n int) (events.Batch, error) {
	var bt events.Batch
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(s.name)
		if b == nil {
			return nil
		}
		if bt.Walk = int64(u64(b.Get(keyWalk))); bt.Walk == 0 {
			return nil
		}
		bt.Floor = pos(b.Get(keyFloor))
		evs := b.Bucket(keyEvents)
		if evs == nil {
			return nil
		}
		spans := b.Bucket(keySpans) // nil: no walk kept with a span
		c := evs.Cursor()
		for k, v := c.Seek(walkKey(max(after.Walk, 0))); k != nil; k, v = c.Next() {
			if len(bt.Events) >= n {
				bt.Full = true
				break
			}
			walk := int64(binary.BigEndian.Uint64(k))
			if walk == after.Walk { // the walk read last: inflate it only if some of it was not read
				if n, err := walkCount(v); err == nil && int64(after.Seq) >= int64(n)-1 {
					continue
				}
			}
			es, err := decodeWalk(walk, v, after)
			if err != nil {
				return err
			}
			bt.Events = append(bt.Events, es...)
			if spans != nil && len(es) > 0 {
				if sc, ok := events.ParseSpan(spans.Get(k)); ok {
					bt.Spans = append(bt.Spans, events.WalkSpan{Walk: walk, Span: sc})
				}
			}
		}
		if len(bt.Events) > 0 {
			bt.Through = bt.Events[len(bt.Events)-1].Pos
		}
		return nil
	})
	if err != nil {
		return events.Batch{}, err
	}
	return bt, nil
}

func walkKey(walk int64) []byte { return be64(uint64(walk)) }

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func u64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func posBytes(p events.Pos) []byte {
	return binary.BigEndian.AppendUint32(be64(uint64(p.Walk)), p.Seq)
}

func pos(b []byte) events.Pos {
	if len(b) != 12 {
		return events.Pos{}
	}
	return events.Pos{Walk: int64(binary.BigEndian.Uint64(b)), Seq: binary.BigEndian.Uint32(b[8:])}
}

// Package redisevents keeps a fleet's one feed of property changes in its
// Redis (docs/contract.md section 23; docs/scaling.md, "The events feed"):
// per PMS (brand and mode) a stream of events trimmed by retention and
// count, the feed's state and the last walk's properties, appended once per
// walk by the member that walked (a compare and set on the last walk) and
// read by every member. Every form of the fleet's Redis works (one
// primary, Sentinel, Cluster: the keys share a hash tag; TLS). What it
// writes is signed with EDGE_FLEET_SECRET, as the shared snapshots are, and
// what does not verify is never served.
package redisevents

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/fleet"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
)

// Config is one PMS's shared feed.
type Config struct {
	Client *redisconn.Client // required
	// Secret is EDGE_FLEET_SECRET: it signs the base, the feed's position
	// fields and every event. Empty verifies nothing: the feed is never
	// read.
	Secret      []byte
	Brand, Mode string // name the keys
	// Retention and Max bound the stream as events.Config's do; zero or
	// less: their defaults.
	Retention time.Duration
	Max       int
	// MaxBytes bounds the stream's bytes as counted (each event's
	// property id, type and JSON plus entryOverhead), the oldest events
	// dropped first, to one event (EDGE_EVENTS_MAX_BYTES); zero or less:
	// DefaultMaxBytes.
	MaxBytes int64
	// MaxBase bounds the base read back (a walk's properties, compressed);
	// zero or less: fleet.DefaultMaxPayload, the shared snapshot's bound.
	MaxBase int
	// Now is the clock of retention; nil: time.Now.
	Now func() time.Time
}

// DefaultMaxBytes is MaxBytes' default: 64 MiB per PMS.
const DefaultMaxBytes = 64 << 20

// entryOverhead is what an event costs in the stream beside its
// property id, type and JSON (its id, chain, counts, MAC, field names and
// the stream's own bookkeeping), counted against MaxBytes.
const entryOverhead = 128

// Store is the shared feed of one PMS in Redis: events.Shared.
type Store struct {
	cfg                 Config
	stream, state, base string
	secret              []byte
}

var _ events.Shared = (*Store)(nil)

// New returns cfg's store.
func New(cfg Config) (*Store, error) {
	if cfg.Client == nil {
		return nil, errors.New("redisevents: no Redis client")
	}
	cfg.Retention = cmp.Or(max(cfg.Retention, 0), events.DefaultRetention)
	cfg.Max = cmp.Or(max(cfg.Max, 0), events.DefaultMax)
	cfg.MaxBytes = cmp.Or(max(cfg.MaxBytes, 0), DefaultMaxBytes)
	cfg.MaxBase = cmp.Or(max(cfg.MaxBase, 0), fleet.DefaultMaxPayload)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	// ev2: the feed's format since its position fields are signed; the
	// keys of the format before are never read (they expire).
	prefix := "pe:ev2:{" + redisconn.KeyPart(cfg.Brand) + ":" + redisconn.KeyPart(cfg.Mode) + "}:"
	return &Store{cfg: cfg, stream: prefix + "s", state: prefix + "m", base: prefix + "b",
		secret: append([]byte(nil), cfg.Secret...)}, nil
}

// minExpiry is the least the keys live after an append: a feed whose PMS
// nobody walks for this long starts again (its old cursors are 410).
const minExpiry = 24 * time.Hour

// Append is events.Shared's. It reads the feed's state first and signs
// the state it writes: the compare and set is on the signature read.
// State missing: the feed starts (again, Forged.Lost, when w.Prev is
// set: from w.Prev, its changes the first events). State forged, or
// older than w.Prev (fields signed once, written back): the fields are
// written again from what verifies (the newest event that verifies, the
// oldest one's chain, w.Floor), under a new epoch (Forged.State).
// w.Restart: a new baseline at w.At, whatever the state.
func (s *Store) Append(ctx context.Context, w events.Walk) (events.Forged, error) {
	var fg events.Forged
	var reply []any
	err := s.do(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
		reply, err = stateScript.Run(ctx, rdb, []string{s.state, s.stream, s.base}).Slice()
		return err
	})
	if err != nil {
		return fg, err
	}
	if len(reply) != 3 {
		return fg, errors.New("redisevents: unexpected reply to the state")
	}
	cur, sig, present, ok := s.parseState(reply[0])
	if others, _ := reply[2].(int64); !present && others > 0 {
		present = true // the state alone is gone: deleted, not lost with the rest
	}
	var st state // the state the walk's events follow
	fresh := false
	switch {
	case !present:
		fresh, fg.Lost = true, w.Prev != 0
		from := cmp.Or(w.Prev, w.At)
		st = state{epoch: newEpoch(), floor: events.EndOf(from), last: events.EndOf(from)}
		if w.Prev == 0 {
			w.Changes = nil // the feed's first walk is its baseline
		}
	case w.Restart:
		// The base does not verify: a new baseline, as when the feed is lost.
		fresh = true
		st = state{epoch: newEpoch(), floor: events.EndOf(w.At), last: events.EndOf(w.At)}
		w.Changes = nil
	case !ok:
		fg.State = true
		if st, err = s.repaired(ctx, w); err != nil {
			return fg, err
		}
	case w.Prev != 0 && cur.walk < w.Prev:
		// Older than the walk this member appended or read: fields signed
		// once, written back (a replay). Written again as forged ones are.
		fg.State = true
		if st, err = s.repaired(ctx, w); err != nil {
			return fg, err
		}
	default:
		if cur.walk != w.Prev || w.At <= cur.walk {
			return fg, events.ErrConflict
		}
		if past, _ := reply[1].([]any); len(past) > 0 {
			// Entries past the last event: forged ones, which the append
			// removes, unless one verifies: then the fields are older than
			// the stream (a replay), and so is the member's base: it reads
			// the base again (which names its own walk) and appends after it.
			newest, err := s.newest(ctx)
			if err != nil {
				return fg, err
			}
			if newest != nil && newest.pos.Compare(cur.last) > 0 {
				return fg, events.ErrConflict
			}
		}
		st = cur
	}
	var frame []byte
	if fresh || fg.State || len(w.Changes) > 0 {
		if frame, err = s.encodeBase(w.Snapshot, w.At); err != nil {
			return fg, err
		}
	}
	next := st
	next.walk = w.At
	evs := make([]any, 0, 8*len(w.Changes))
	for i, c := range w.Changes {
		id := streamID(events.Pos{Walk: w.At, Seq: uint32(i)})
		t := strconv.Itoa(int(c.Type))
		prev := streamID(next.last)
		next.n++
		next.nb += int64(len(c.Item.ID) + len(t) + len(c.Item.JSON) + entryOverhead)
		cs, bs := strconv.FormatInt(next.n, 10), strconv.FormatInt(next.nb, 10)
		evs = append(evs, id, c.Item.ID, t, c.Item.JSON, prev, cs, bs, s.mac(id, prev, cs, bs, c.Item.ID, t, c.Item.JSON))
		next.last = events.Pos{Walk: w.At, Seq: uint32(i)}
	}
	next.kc = max(next.kc, next.n-int64(s.cfg.Max)+1)
	next.kb = max(next.kb, next.nb-s.cfg.MaxBytes)
	next.cut = max(next.cut, s.cfg.Now().Add(-s.cfg.Retention).UnixMilli())
	args := make([]any, 0, 15+len(evs))
	args = append(args, sig, boolArg(fresh), streamID(st.last))
	for _, v := range s.values(next) {
		args = append(args, v)
	}
	args = append(args, frame, max(s.cfg.Retention, minExpiry).Milliseconds())
	args = append(args, evs...)
	var res []int64
	err = s.do(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
		res, err = appendScript.Run(ctx, rdb, []string{s.stream, s.state, s.base}, args...).Int64Slice()
		return err
	})
	switch {
	case err != nil:
		return fg, err
	case len(res) != 2:
		return fg, errors.New("redisevents: unexpected reply to an append")
	case res[0] != 1:
		return fg, events.ErrConflict
	}
	fg.Stream = int(res[1])
	return fg, nil
}

// repaired is the state to write again over forged fields, from what
// verifies: the feed's last event is the newest event that verifies (its
// counts with it; w.Prev must not be older than its walk: ErrConflict,
// and the member reads the base), its floor the chain of the oldest event
// (exact: the last event trimmed, or where the feed started), else the
// appending member's floor (w.Floor), else the end of w.Prev. The trims
// start again from there.
func (s *Store) repaired(ctx context.Context, w events.Walk) (state, error) {
	if w.Prev == 0 {
		return state{}, events.ErrConflict // a member with no base cannot diff: it reads the base first
	}
	st := state{epoch: newEpoch(), floor: events.EndOf(w.Prev)}
	if w.Floor != (events.Pos{}) {
		st.floor = w.Floor
	}
	var head []any
	err := s.do(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
		head, err = headScript.Run(ctx, rdb, []string{s.stream}).Slice()
		return err
	})
	if err != nil {
		return state{}, err
	}
	if len(head) == 1 {
		if e, _, ok := s.entry(head[0]); ok {
			st.floor = e.prev
		}
	}
	st.last = st.floor
	newest, err := s.newest(ctx)
	if err != nil || newest == nil {
		return st, err
	}
	if newest.pos.Walk > w.Prev {
		return state{}, events.ErrConflict
	}
	st.last, st.n, st.nb = newest.pos, newest.c, newest.b
	return st, nil
}

// maxTail bounds the entries repaired looks through, newest first, for
// one that verifies: past them it takes none (a stream of forgeries).
const maxTail = 10_000

// newest is the newest entry of the stream that verifies (nil: none
// among the newest maxTail).
func (s *Store) newest(ctx context.Context) (*entry, error) {
	from := "+"
	for seen := 0; seen < maxTail; {
		var es []any
		err := s.do(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
			es, err = tailScript.Run(ctx, rdb, []string{s.stream}, from, 1000).Slice()
			return err
		})
		if err != nil || len(es) == 0 {
			return nil, err
		}
		for _, e := range es {
			en, pos, ok := s.entry(e)
			if ok {
				return &en, nil
			}
			if pos == (events.Pos{}) {
				return nil, nil
			}
			from = "(" + streamID(pos)
		}
		seen += len(es)
	}
	return nil, nil
}

// Base is events.Shared's. Forged position fields: the walk the base
// was written at, which its signature covers.
func (s *Store) Base(ctx context.Context, have int64) (int64, *upstream.Snapshot, error) {
	var reply []any
	err := s.do(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
		reply, err = baseScript.Run(ctx, rdb, []string{s.state, s.base}, have, s.cfg.MaxBase).Slice()
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	if len(reply) != 2 {
		return 0, nil, errors.New("redisevents: unexpected reply to the base")
	}
	st, _, present, ok := s.parseState(reply[0])
	frame := str(reply[1])
	switch {
	case !present && frame == "":
		return 0, nil, nil // no feed
	case ok && st.walk == have:
		return have, nil, nil
	case reply[1] == nil && !ok:
		return have, nil, nil // the walk field says have: the base is the member's own
	}
	if len(frame) > s.cfg.MaxBase {
		return 0, nil, fleet.ErrTooLarge
	}
	walk, items, err := s.decodeBase([]byte(frame))
	if err != nil {
		return 0, nil, err
	}
	if ok && walk <= st.walk {
		walk = st.walk // the base is unchanged since the walk it was written at
	} // else the fields are forged or older than the base (a replay): the base's own walk

	return walk, upstream.NewSnapshot(items, time.UnixMilli(walk)), nil
}

// Read is events.Shared's. It takes nothing from position fields that do
// not verify (Forged.State, no walk); an event that does not verify is
// left out (Forged.Events); an event the chain names that is gone (the
// one before the first read is not after, the one before each is not the
// previous, the last is not the state's) is counted (Forged.Deleted).
// The floor is where the feed started or the last event trimmed rightly
// (the oldest event's chain under the state's trims); never raised by a
// deletion.
func (s *Store) Read(ctx context.Context, after events.Pos, n int) (events.Batch, error) {
	var reply []any
	err := s.do(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
		reply, err = readScript.Run(ctx, rdb, []string{s.stream, s.state}, streamID(after), n).Slice()
		return err
	})
	if err != nil {
		return events.Batch{}, err
	}
	if len(reply) != 3 {
		return events.Batch{}, errors.New("redisevents: unexpected reply to a read")
	}
	st, _, present, ok := s.parseState(reply[0])
	head, _ := reply[1].([]any)
	switch {
	case !present && len(head) == 0:
		return events.Batch{}, nil
	case !ok: // forged, or deleted while the stream is there
		return events.Batch{Forged: events.Forged{State: true}}, nil
	}
	b := events.Batch{Walk: st.walk, Epoch: st.epoch, Floor: st.floor}
	if len(head) == 1 {
		if e, _, ok := s.entry(head[0]); ok && st.trimmed(e.prev, e.c-1, e.b-e.size) {
			b.Floor = max2(st.floor, e.prev)
		}
	} else if st.trimmed(st.last, st.n, st.nb) {
		b.Floor = max2(st.floor, st.last)
	} else {
		b.Forged.Deleted++ // the stream lost events the state names
	}
	entries, _ := reply[2].([]any)
	b.Full = len(entries) == n
	prev, first := after, true
	for _, raw := range entries {
		e, pos, ok := s.entry(raw)
		if pos != (events.Pos{}) {
			b.Through = pos
		}
		if !ok {
			b.Forged.Events++
			continue
		}
		if first && e.prev.Compare(after) > 0 && e.prev.Compare(b.Floor) > 0 || !first && e.prev != prev {
			b.Forged.Deleted++
		}
		prev, first = e.pos, false
		b.Events = append(b.Events, events.Stored{Pos: e.pos, Type: e.typ, Prop: e.prop, Data: e.data})
	}
	if !b.Full && prev != st.last && st.last.Compare(after) > 0 && st.last.Compare(b.Floor) > 0 && len(head) == 1 {
		b.Forged.Deleted++ // the newest events are gone
	}
	return b, nil
}

// entry is one event of the stream as read.
type entry struct {
	pos, prev  events.Pos // its id and the previous event's (its chain)
	c, b, size int64      // its running count and bytes, and its own bytes
	typ        events.Type
	prop       string
	data       []byte
}

// entry reads one stream entry, [id, [field, value...]], if it verifies;
// pos is its position whether or not it does (zero: not a stream id).
func (s *Store) entry(raw any) (_ entry, pos events.Pos, ok bool) {
	pair, _ := raw.([]any)
	if len(pair) != 2 {
		return entry{}, pos, false
	}
	id := str(pair[0])
	pos, err := parseID(id)
	if err != nil {
		return entry{}, pos, false
	}
	fields, _ := pair[1].([]any)
	var prop, typ, data, prev, cs, bs, mac string
	for i := 0; i+1 < len(fields); i += 2 {
		switch v := str(fields[i+1]); str(fields[i]) {
		case "p":
			prop = v
		case "t":
			typ = v
		case "d":
			data = v
		case "v":
			prev = v
		case "c":
			cs = v
		case "b":
			bs = v
		case "m":
			mac = v
		}
	}
	if len(s.secret) == 0 || !hmac.Equal([]byte(mac), s.mac(id, prev, cs, bs, prop, typ, []byte(data))) {
		return entry{}, pos, false
	}
	t, err := strconv.Atoi(typ)
	pp, err1 := parseID(prev)
	c, err2 := strconv.ParseInt(cs, 10, 64)
	b, err3 := strconv.ParseInt(bs, 10, 64)
	if err != nil || err1 != nil || err2 != nil || err3 != nil || t < int(events.Created) || t > int(events.Removed) {
		return entry{}, pos, false
	}
	return entry{pos: pos, prev: pp, c: c, b: b, size: int64(len(prop) + len(typ) + len(data) + entryOverhead),
		typ: events.Type(t), prop: prop, data: []byte(data)}, pos, true
}

// mac is an event's HMAC-SHA256 under the secret, over the stream's name,
// the event's id, the previous event's id, its running count and bytes
// and its fields (so an event cannot be replayed elsewhere, nor the chain
// cut unseen), truncated to 16 bytes.
func (s *Store) mac(id, prev, c, b, prop, typ string, data []byte) []byte {
	m := hmac.New(sha256.New, s.secret)
	for _, part := range []string{s.stream, id, prev, c, b, prop, typ} {
		m.Write([]byte(part))
		m.Write([]byte{0})
	}
	m.Write(data)
	return m.Sum(nil)[:16]
}

func max2(a, b events.Pos) events.Pos {
	if a.Compare(b) >= 0 {
		return a
	}
	return b
}

// boolArg is a script's flag.
func boolArg(b bool) string {
	if b {
		return "1"
	}
	return ""
}

// do is Client.Do, its "Redis is away" errors (redisconn.ErrUnavailable: down,
// breaker open, writes refused) also events.ErrSharedUnavailable.
func (s *Store) do(ctx context.Context, fn func(context.Context, redis.UniversalClient) error) error {
	err := s.cfg.Client.Do(ctx, fn)
	if errors.Is(err, redisconn.ErrUnavailable) {
		return fmt.Errorf("%w: %w", events.ErrSharedUnavailable, err)
	}
	return err
}

// streamID is the stream id of a position.
func streamID(p events.Pos) string {
	return strconv.FormatInt(p.Walk, 10) + "-" + strconv.FormatUint(uint64(p.Seq), 10)
}

func parseID(s string) (events.Pos, error) {
	ms, seq, ok := strings.Cut(s, "-")
	w, err1 := strconv.ParseInt(ms, 10, 64)
	q, err2 := strconv.ParseUint(seq, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return events.Pos{}, fmt.Errorf("redisevents: %q is not a stream id of the feed", s)
	}
	return events.Pos{Walk: w, Seq: uint32(q)}, nil
}

// str is a reply element as a string ("" for nil and other types).
func str(v any) string {
	s, _ := v.(string)
	return s
}

// Package redisevents keeps a fleet's one feed of property changes in its
// Redis (docs/contract.md section 23; docs/scaling.md, "The events feed"):
// per PMS (brand and mode) a stream of events trimmed by retention, count
// and bytes, the feed's state (its position fields) and the last walk's
// properties, appended once per walk by the member that walked (a compare
// and set on the state's signature) and read by every member. Every form
// of the fleet's Redis works (one primary, Sentinel, Cluster: the keys
// share a hash tag; TLS). Everything it reads is signed with
// EDGE_FLEET_SECRET, as the shared snapshots are, or checked against what
// is (docs/scaling.md, "Who can steer the feed"): what does not verify is
// never used, and is reported (events.Forged) so the feed logs it.
package redisevents

import (
	"cmp"
	"context"
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
// the stream's own bookkeeping), counted against MaxBytes. A walk's span,
// on its first event (spanField: 42 bytes a walk), is not counted.
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
// set), at w.At, or from w.Prev when it is the feed's last walk the
// member knew (w.Last), its changes the first events. State forged, or
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
		from := w.At
		if w.Prev != 0 && w.Prev == w.Last {
			from = w.Prev // the member's base is the feed's last walk: resumed from it
		} else {
			w.Changes = nil // the feed's first walk is its baseline
		}
		st = state{epoch: newEpoch(), floor: events.EndOf(from), last: events.EndOf(from)}
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
	var span []byte // the walk's span, on its first event (spanField); nil: none
	for i, c := range w.Changes {
		id := streamID(events.Pos{Walk: w.At, Seq: uint32(i)})
		t := strconv.Itoa(int(c.Type))
		prev := streamID(next.last)
		next.n++
		next.nb += int64(len(c.Item.ID) + len(t) + len(c.Item.JSON) + entryOverhead)
		cs, bs := strconv.FormatInt(next.n, 10), strconv.FormatInt(next.nb, 10)
		mac := s.mac(id, prev, cs, bs, c.Item.ID, t, c.Item.JSON)
		evs = append(evs, id, c.Item.ID, t, c.Item.JSON, prev, cs, bs, mac)
		if i == 0 && w.Span.IsValid() {
			span = s.spanField(id, mac, w.Span)
		}
		next.last = events.Pos{Walk: w.At, Seq: uint32(i)}
	}
	next.kc = max(next.kc, next.n-int64(s.cfg.Max)+1)
	next.kb = max(next.kb, next.nb-s.cfg.MaxBytes)
	next.cut = max(next.cut, s.cfg.Now().Add(-s.cfg.Retention).UnixMilli())
	args := make([]any, 0, 16+len(evs))
	args = append(args, sig, boolArg(fresh), streamID(st.last))
	for _, v := range s.values(next) {
		args = append(args, v)
	}
	args = append(args, frame, max(s.cfg.Retention, minExpiry).Milliseconds(), span)
	args = append(args, evs...)
	var res []int64
	err = s.doBulk(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
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

// Base is events.Shared's. Forged position fields: the walk the base
// was written at, which its signature covers.
func (s *Store) Base(ctx context.Context, have int64) (int64, *upstream.Snapshot, error) {
	var reply []any
	err := s.doBulk(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
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
	return unavailable(s.cfg.Client.Do(ctx, fn))
}

// doBulk is do for a walk's worth of data (an append, the base), bounded
// by the bulk timeout (redisconn.Client.DoBulk): a walk of a brand's
// 50,000 properties takes longer than a request's call timeout.
func (s *Store) doBulk(ctx context.Context, fn func(context.Context, redis.UniversalClient) error) error {
	return unavailable(s.cfg.Client.DoBulk(ctx, fn))
}

// unavailable is err, also events.ErrSharedUnavailable when it means
// that Redis is away.
func unavailable(err error) error {
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

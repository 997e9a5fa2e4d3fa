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
	// Secret is EDGE_FLEET_SECRET: it signs the base and every event.
	// Empty verifies nothing: the feed is never read.
	Secret      []byte
	Brand, Mode string // name the keys
	// Retention and Max bound the stream as events.Config's do; zero or
	// less: their defaults.
	Retention time.Duration
	Max       int
	// MaxBase bounds the base read back (a walk's properties, compressed);
	// zero or less: fleet.DefaultMaxPayload, the shared snapshot's bound.
	MaxBase int
	// Now is the clock of retention; nil: time.Now.
	Now func() time.Time
}

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
	cfg.MaxBase = cmp.Or(max(cfg.MaxBase, 0), fleet.DefaultMaxPayload)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	prefix := "pe:ev:{" + redisconn.KeyPart(cfg.Brand) + ":" + redisconn.KeyPart(cfg.Mode) + "}:"
	return &Store{cfg: cfg, stream: prefix + "s", state: prefix + "m", base: prefix + "b",
		secret: append([]byte(nil), cfg.Secret...)}, nil
}

// minExpiry is the least the keys live after an append: a feed whose PMS
// nobody walks for this long starts again (its old cursors are 410).
const minExpiry = 24 * time.Hour

// Append is events.Shared's.
func (s *Store) Append(ctx context.Context, w events.Walk) error {
	var frame []byte
	if w.Prev == 0 || len(w.Changes) > 0 {
		var err error
		if frame, err = s.encodeBase(w.Snapshot); err != nil {
			return err
		}
	}
	cut := s.cfg.Now().Add(-s.cfg.Retention).UnixMilli()
	args := make([]any, 0, 6+5*len(w.Changes))
	args = append(args, w.Prev, w.At, max(cut, 0), s.cfg.Max, frame, max(s.cfg.Retention, minExpiry).Milliseconds())
	for i, c := range w.Changes {
		id := streamID(events.Pos{Walk: w.At, Seq: uint32(i)})
		t := strconv.Itoa(int(c.Type))
		args = append(args, id, c.Item.ID, t, c.Item.JSON, s.mac(id, c.Item.ID, t, c.Item.JSON))
	}
	var ok int
	err := s.do(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
		ok, err = appendScript.Run(ctx, rdb, []string{s.stream, s.state, s.base}, args...).Int()
		return err
	})
	switch {
	case err != nil:
		return err
	case ok != 1:
		return events.ErrConflict
	}
	return nil
}

// Base is events.Shared's.
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
	walk, err := strconv.ParseInt(str(reply[0]), 10, 64)
	if err != nil {
		return 0, nil, errors.New("redisevents: the feed's state is not a walk")
	}
	if walk == 0 || walk == have {
		return walk, nil, nil
	}
	frame := str(reply[1])
	if len(frame) > s.cfg.MaxBase {
		return 0, nil, fleet.ErrTooLarge
	}
	items, err := s.decodeBase([]byte(frame))
	if err != nil {
		return 0, nil, err
	}
	return walk, upstream.NewSnapshot(items, time.UnixMilli(walk)), nil
}

// Read is events.Shared's. An event whose MAC does not verify under the
// secret (written without it) is left out and counted (Batch.Refused).
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
	var b events.Batch
	if b.Walk, err = strconv.ParseInt(str(reply[0]), 10, 64); err != nil {
		return events.Batch{}, errors.New("redisevents: the feed's state is not a walk")
	}
	if b.Walk == 0 {
		return events.Batch{}, nil
	}
	if b.Floor, err = parseID(str(reply[1])); err != nil {
		return events.Batch{}, err
	}
	entries, _ := reply[2].([]any)
	b.Full = len(entries) == n
	for _, e := range entries {
		st, id, ok := s.stored(e)
		if id != (events.Pos{}) {
			b.Through = id
		}
		if !ok {
			b.Refused++
			continue
		}
		b.Events = append(b.Events, st)
	}
	return b, nil
}

// stored reads one stream entry, [id, [field, value...]], if it verifies;
// pos is its position whether or not it does (zero: not a stream id).
func (s *Store) stored(e any) (_ events.Stored, pos events.Pos, ok bool) {
	pair, _ := e.([]any)
	if len(pair) != 2 {
		return events.Stored{}, pos, false
	}
	id := str(pair[0])
	pos, err := parseID(id)
	if err != nil {
		return events.Stored{}, pos, false
	}
	fields, _ := pair[1].([]any)
	var prop, typ, data, mac string
	for i := 0; i+1 < len(fields); i += 2 {
		switch v := str(fields[i+1]); str(fields[i]) {
		case "p":
			prop = v
		case "t":
			typ = v
		case "d":
			data = v
		case "m":
			mac = v
		}
	}
	if len(s.secret) == 0 || !hmac.Equal([]byte(mac), s.mac(id, prop, typ, []byte(data))) {
		return events.Stored{}, pos, false
	}
	t, err := strconv.Atoi(typ)
	if err != nil || t < int(events.Created) || t > int(events.Removed) {
		return events.Stored{}, pos, false
	}
	return events.Stored{Pos: pos, Type: events.Type(t), Prop: prop, Data: []byte(data)}, pos, true
}

// mac is an event's HMAC-SHA256 under the secret, over the stream's name
// and the event's fields (so an event cannot be replayed elsewhere),
// truncated to 16 bytes.
func (s *Store) mac(id, prop, typ string, data []byte) []byte {
	m := hmac.New(sha256.New, s.secret)
	for _, part := range []string{s.stream, id, prop, typ} {
		m.Write([]byte(part))
		m.Write([]byte{0})
	}
	m.Write(data)
	return m.Sum(nil)[:16]
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

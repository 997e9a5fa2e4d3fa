package redisevents

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/upstream/events"
)

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
	// A read takes up to a walk's worth of events: bounded by the bulk
	// timeout and the caller's own deadline (a partner's request has one),
	// not a rate limit's 100 ms, so that a member catching up on a walk
	// of a brand's every property is not cut off on every batch.
	err := s.doBulk(ctx, func(ctx context.Context, rdb redis.UniversalClient) (err error) {
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
		if e.span.IsValid() {
			b.Spans = append(b.Spans, events.WalkSpan{Walk: e.pos.Walk, Span: e.span})
		}
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
	span       trace.SpanContext // its walk's, on a walk's first event (spanField); zero: none
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
	var prop, typ, data, prev, cs, bs, mac, span string
	hasSpan := false
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
		case "w":
			span, hasSpan = v, true
		}
	}
	if len(s.secret) == 0 || !hmac.Equal([]byte(mac), s.mac(id, prev, cs, bs, prop, typ, []byte(data))) {
		return entry{}, pos, false
	}
	var sc trace.SpanContext
	if hasSpan { // absent: an event after its walk's first, or written before spans were kept
		if sc, ok = s.parseSpanField(id, []byte(mac), []byte(span)); !ok {
			return entry{}, pos, false
		}
	}
	t, err := strconv.Atoi(typ)
	pp, err1 := parseID(prev)
	c, err2 := strconv.ParseInt(cs, 10, 64)
	b, err3 := strconv.ParseInt(bs, 10, 64)
	if err != nil || err1 != nil || err2 != nil || err3 != nil || t < int(events.Created) || t > int(events.Removed) {
		return entry{}, pos, false
	}
	return entry{pos: pos, prev: pp, c: c, b: b, size: int64(len(prop) + len(typ) + len(data) + entryOverhead),
		typ: events.Type(t), prop: prop, data: []byte(data), span: sc}, pos, true
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

// A walk's span (events.Walk.Span) is kept once per walk, in the field w
// of its first event: the span (events.AppendSpan, 25 bytes), then its
// MAC (16 bytes): HMAC-SHA256 under the secret of "w", the stream's
// name, the event's id and MAC (which covers the rest of the event) and
// the span. A MAC of its own, not a field more under the event's: a
// member of an earlier build, which does not know w, still verifies
// the event (a fleet is upgraded member by member), and an event
// without w (any but a walk's first, or one written before w existed)
// verifies as it did. A w that does not verify refuses its event, as any
// field would.
const spanFieldLen = events.SpanLen + 16

// spanField is the field w of the event id whose MAC is mac: sc and its
// MAC.
func (s *Store) spanField(id string, mac []byte, sc trace.SpanContext) []byte {
	f := events.AppendSpan(make([]byte, 0, spanFieldLen), sc)
	return append(f, s.spanMAC(id, mac, f)...)
}

// parseSpanField reads the field w of the event id whose MAC is mac:
// false when it does not verify.
func (s *Store) parseSpanField(id string, mac, f []byte) (trace.SpanContext, bool) {
	if len(f) != spanFieldLen || !hmac.Equal(f[events.SpanLen:], s.spanMAC(id, mac, f[:events.SpanLen])) {
		return trace.SpanContext{}, false
	}
	return events.ParseSpan(f[:events.SpanLen])
}

func (s *Store) spanMAC(id string, mac, span []byte) []byte {
	m := hmac.New(sha256.New, s.secret)
	for _, part := range [][]byte{[]byte("w"), []byte(s.stream), []byte(id), mac} {
		m.Write(part)
		m.Write([]byte{0})
	}
	m.Write(span)
	return m.Sum(nil)[:16]
}

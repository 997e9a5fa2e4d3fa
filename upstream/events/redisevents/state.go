package redisevents

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/partner-edge/partner-edge/upstream/events"
)

// state is the feed's position fields (the hash :m), signed as one: a
// member reads none of them unless the signature verifies, so nobody
// without EDGE_FLEET_SECRET can move the feed's last walk, floor or last
// event (docs/scaling.md, "Who can steer the feed").
type state struct {
	// epoch names this run of the feed (random): a new one when the feed
	// starts, again after Redis lost it, or when forged fields are written
	// again; a member that sees another epoch reads the feed again.
	epoch string
	walk  int64      // the last walk appended
	floor events.Pos // where the feed starts: a cursor before it is 410
	// last is the newest event appended (floor while none): every event
	// names the one before it (its chain), and the stream holds nothing
	// after last that a member wrote.
	last events.Pos
	// n and nb count the events and their bytes appended since the feed
	// started, through last: each event carries its own running counts.
	n, nb int64
	// kc, kb and cut are the trims so far: an event whose count is below
	// kc (EDGE_EVENTS_MAX), whose running bytes are at most kb (MaxBytes)
	// or whose walk is before cut (retention) has been trimmed, rightly.
	// An event gone from the stream otherwise was deleted.
	kc, kb, cut int64
}

// values are the state's fields in stateFields' order, the signature
// last.
func (s *Store) values(st state) []string {
	v := []string{st.epoch, strconv.FormatInt(st.walk, 10), streamID(st.floor), streamID(st.last),
		strconv.FormatInt(st.n, 10), strconv.FormatInt(st.nb, 10),
		strconv.FormatInt(st.kc, 10), strconv.FormatInt(st.kb, 10), strconv.FormatInt(st.cut, 10)}
	return append(v, s.stateMAC(v))
}

// stateMAC is the state's signature: HMAC-SHA256 under the secret of the
// state key's name and its fields, truncated to 16 bytes, in hex.
func (s *Store) stateMAC(v []string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(s.state))
	for _, f := range v {
		m.Write([]byte{0})
		m.Write([]byte(f))
	}
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// parseState reads the scripts' answer of the state's fields: present,
// that any field exists (none: no feed); ok, that they verify. sig is the
// signature field as stored, for the compare and set.
func (s *Store) parseState(reply any) (st state, sig string, present, ok bool) {
	vals, _ := reply.([]any)
	fields := make([]string, len(vals))
	for i, v := range vals {
		if v != nil {
			present = true
		}
		fields[i] = str(v)
	}
	if !present || len(fields) != len(stateFields) {
		return state{}, "", present, false
	}
	sig = fields[9]
	if len(s.secret) == 0 || !hmac.Equal([]byte(sig), []byte(s.stateMAC(fields[:9]))) {
		return state{}, sig, true, false
	}
	st.epoch = fields[0]
	ints := []*int64{&st.walk, nil, nil, &st.n, &st.nb, &st.kc, &st.kb, &st.cut}
	for i, p := range ints {
		if p == nil {
			continue
		}
		var err error
		if *p, err = strconv.ParseInt(fields[i+1], 10, 64); err != nil {
			return state{}, sig, true, false
		}
	}
	var err1, err2 error
	st.floor, err1 = parseID(fields[2])
	st.last, err2 = parseID(fields[3])
	if err1 != nil || err2 != nil || st.epoch == "" {
		return state{}, sig, true, false
	}
	return st, sig, true, true
}

// trimmed reports whether the event at p, whose running count and bytes
// are c and b, was trimmed rightly under st (or is no event: at or before
// the feed's floor).
func (st state) trimmed(p events.Pos, c, b int64) bool {
	return p.Compare(st.floor) <= 0 || c < st.kc || b <= st.kb || p.Walk < st.cut
}

// newEpoch is a fresh epoch name.
func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

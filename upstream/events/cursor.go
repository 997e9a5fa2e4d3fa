package events

import (
	"encoding/binary"
	"errors"
	"math"
)

// Errors of Feed.Page. The edge turns them into problems (docs/contract.md
// section 23): ErrCursorExpired is 410 EVENTS_CURSOR_EXPIRED,
// ErrCursorUnknown 422 VALIDATION_FAILED on after.
var (
	// ErrCursorExpired is an after older than the events kept: the
	// partner lists again and follows the feed from the list's cursor.
	ErrCursorExpired = errors.New("events: cursor older than the events kept")
	// ErrCursorUnknown is an after this feed never issued: not a cursor,
	// another mode's, or one from the future.
	ErrCursorUnknown = errors.New("events: not a cursor of this feed")
)

// Pos is a place in a feed: the walk whose changes an event is (its time,
// Unix milliseconds) and the event's index among them. Positions grow with
// walks; EndOf(walk) is after every event of walk and before any of a later
// one: the position of a list answer served from that walk's snapshot.
type Pos struct {
	Walk int64
	Seq  uint32
}

// EndOf is the position after every event of walk.
func EndOf(walk int64) Pos { return Pos{Walk: walk, Seq: math.MaxUint32} }

// Compare orders positions: -1, 0 or +1.
func (p Pos) Compare(q Pos) int {
	switch {
	case p.Walk < q.Walk:
		return -1
	case p.Walk > q.Walk:
		return 1
	case p.Seq < q.Seq:
		return -1
	case p.Seq > q.Seq:
		return 1
	}
	return 0
}

// A cursor is "evt_" and 26 characters of lower-case Crockford base32 of
// 16 bytes: the format (1), the feed's tag (the first letter of its mode:
// a live cursor is no test cursor), the walk (8 bytes, big-endian), the
// sequence (4) and a check (2 bytes of the FNV-1a hash of the 14 before), so a
// mistyped or truncated cursor is never taken for one the edge issued.
// Opaque to partners (docs/partner-api.md): only the edge reads it.
const (
	cursorPrefix  = "evt_"
	cursorFormat  = 1
	cursorBytes   = 16
	cursorLen     = len(cursorPrefix) + 26
	cursorChecked = 14
)

const base32Alphabet = "0123456789abcdefghjkmnpqrstvwxyz"

// base32Value is the value of each base32 character, 0xff for none.
var base32Value = func() (v [256]byte) {
	for i := range v {
		v[i] = 0xff
	}
	for i := range len(base32Alphabet) {
		v[base32Alphabet[i]] = byte(i)
	}
	return v
}()

// appendCursor appends the cursor of p in the feed tagged tag.
func appendCursor(b []byte, tag byte, p Pos) []byte {
	var raw [cursorBytes]byte
	raw[0], raw[1] = cursorFormat, tag
	binary.BigEndian.PutUint64(raw[2:10], uint64(p.Walk))
	binary.BigEndian.PutUint32(raw[10:14], p.Seq)
	binary.BigEndian.PutUint16(raw[14:16], check(raw[:cursorChecked]))
	b = append(b, cursorPrefix...)
	// 128 bits in 26 groups of 5, the last padded with two zero bits.
	var acc uint32
	bits := 0
	for _, c := range raw {
		acc = acc<<8 | uint32(c)
		bits += 8
		for bits >= 5 {
			bits -= 5
			b = append(b, base32Alphabet[(acc>>bits)&31])
		}
	}
	return append(b, base32Alphabet[(acc<<(5-bits))&31])
}

// parseCursor reads a cursor of the feed tagged tag; false for anything
// else. It does not allocate.
func parseCursor(s string, tag byte) (Pos, bool) {
	if len(s) != cursorLen || s[:len(cursorPrefix)] != cursorPrefix {
		return Pos{}, false
	}
	var raw [cursorBytes]byte
	var acc uint32
	bits, n := 0, 0
	for i := len(cursorPrefix); i < len(s); i++ {
		v := base32Value[s[i]]
		if v == 0xff {
			return Pos{}, false
		}
		acc = acc<<5 | uint32(v)
		bits += 5
		if bits >= 8 {
			bits -= 8
			raw[n] = byte(acc >> bits)
			n++
		}
	}
	if acc&(1<<bits-1) != 0 { // the padding bits: one spelling per cursor
		return Pos{}, false
	}
	if raw[0] != cursorFormat || raw[1] != tag ||
		binary.BigEndian.Uint16(raw[14:16]) != check(raw[:cursorChecked]) {
		return Pos{}, false
	}
	return Pos{Walk: int64(binary.BigEndian.Uint64(raw[2:10])), Seq: binary.BigEndian.Uint32(raw[10:14])}, true
}

// check is the low 16 bits of the 32-bit FNV-1a hash of b (written out:
// hash/fnv's would move the cursor's bytes to the heap).
func check(b []byte) uint16 {
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return uint16(h ^ h>>16)
}

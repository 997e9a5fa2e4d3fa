package boltevents

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/klauspost/compress/zstd"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
)

// A walk's events are one value, keyed by the walk: the format byte (1),
// the number of events and the inflated payload's length (uvarints: the
// reader sizes its buffer once), then zstd of, per event in order (its
// index is its position's sequence), its type (one byte), the property's
// id and its public JSON, each preceded by its length (uvarint). The base
// is one value too: the format byte, the inflated length, then zstd of,
// per property in the
// order the PMS listed them, its id and public JSON, length-prefixed.
// Compressed together, a walk's JSON takes a fraction of its size: what a
// walk writes, and the memory its transaction holds, stay small at brand
// scale. zstd's frame checksum refuses a damaged value.
const (
	walkFormat = 1
	baseFormat = 1
)

// maxDecoded bounds what one value inflates to: a walk of a brand of
// 50,000 hotels is some 25 MB.
const maxDecoded = 1 << 30

var errBadValue = errors.New("boltevents: a stored value does not decode")

// encoder compresses into a buffer, part after part; bytes puts the
// header (format, count when one is given, inflated length) before it.
type encoder struct {
	format byte
	count  int // -1: none
	raw    int // bytes written before compression
	buf    bytes.Buffer
	zw     *zstd.Encoder
	n      [binary.MaxVarintLen64]byte
}

func newEncoder(format byte, count int) (*encoder, error) {
	e := &encoder{format: format, count: count}
	zw, err := zstd.NewWriter(&e.buf, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, err
	}
	e.zw = zw
	return e, nil
}

func (e *encoder) write(b []byte) error {
	e.raw += len(b)
	_, err := e.zw.Write(b)
	return err
}

// part writes b preceded by its length.
func (e *encoder) part(b []byte) error {
	if err := e.write(e.n[:binary.PutUvarint(e.n[:], uint64(len(b)))]); err != nil {
		return err
	}
	return e.write(b)
}

func (e *encoder) bytes() ([]byte, error) {
	if err := e.zw.Close(); err != nil {
		return nil, err
	}
	out := make([]byte, 0, 1+2*binary.MaxVarintLen64+e.buf.Len())
	out = append(out, e.format)
	if e.count >= 0 {
		out = binary.AppendUvarint(out, uint64(e.count))
	}
	out = binary.AppendUvarint(out, uint64(e.raw))
	return append(out, e.buf.Bytes()...), nil
}

// encodeWalk is the value of a walk's changes.
func encodeWalk(changes []events.Change) ([]byte, error) {
	e, err := newEncoder(walkFormat, len(changes))
	if err != nil {
		return nil, err
	}
	for _, c := range changes {
		if err := e.write([]byte{byte(c.Type)}); err != nil {
			return nil, err
		}
		if err := e.part([]byte(c.Item.ID)); err != nil {
			return nil, err
		}
		if err := e.part(c.Item.JSON); err != nil {
			return nil, err
		}
	}
	return e.bytes()
}

// encodeBase is the value of a walk's properties.
func encodeBase(snap *upstream.Snapshot) ([]byte, error) {
	e, err := newEncoder(baseFormat, -1)
	if err != nil {
		return nil, err
	}
	if snap != nil {
		for _, it := range snap.Loaded() {
			if err := e.part([]byte(it.ID)); err != nil {
				return nil, err
			}
			if err := e.part(it.JSON); err != nil {
				return nil, err
			}
		}
	}
	return e.bytes()
}

// walkCount is the number of events a walk's value holds, read without
// inflating it.
func walkCount(v []byte) (int, error) {
	if len(v) < 2 || v[0] != walkFormat {
		return 0, errBadValue
	}
	n, k := binary.Uvarint(v[1:])
	if k <= 0 || n > maxDecoded {
		return 0, errBadValue
	}
	return int(n), nil
}

// inflate reads the inflated length at v's start and decompresses what
// follows it into a buffer of that size.
func inflate(v []byte) ([]byte, error) {
	size, k := binary.Uvarint(v)
	if k <= 0 || size > maxDecoded {
		return nil, errBadValue
	}
	zr, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecoded))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	raw, err := zr.DecodeAll(v[k:], make([]byte, 0, size))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errBadValue, err)
	}
	if len(raw) != int(size) {
		return nil, errBadValue
	}
	return raw, nil
}

// reader takes length-prefixed parts from raw.
type reader struct{ raw []byte }

func (r *reader) part() ([]byte, bool) {
	l, n := binary.Uvarint(r.raw)
	if n <= 0 || l > uint64(len(r.raw)-n) {
		return nil, false
	}
	p := r.raw[n : n+int(l)]
	r.raw = r.raw[n+int(l):]
	return p, true
}

// id reads a property id: a lower-case UUID, as the edge wrote it.
func (r *reader) id() (string, bool) {
	p, ok := r.part()
	if !ok {
		return "", false
	}
	id := string(p)
	parsed, ok := mapping.ParseID(id)
	return id, ok && parsed == id
}

// decodeWalk reads the events of walk from its value, each after after
// only (their data pointing into one inflated buffer).
func decodeWalk(walk int64, v []byte, after events.Pos) ([]events.Stored, error) {
	n, err := walkCount(v)
	if err != nil {
		return nil, err
	}
	_, k := binary.Uvarint(v[1:])
	raw, err := inflate(v[1+k:])
	if err != nil {
		return nil, err
	}
	r := reader{raw: raw}
	out := make([]events.Stored, 0, n)
	for i := range n {
		if len(r.raw) == 0 {
			return nil, errBadValue
		}
		t := events.Type(r.raw[0])
		r.raw = r.raw[1:]
		id, ok := r.id()
		data, ok2 := r.part()
		if !ok || !ok2 || t < events.Created || t > events.Removed {
			return nil, errBadValue
		}
		p := events.Pos{Walk: walk, Seq: uint32(i)}
		if p.Compare(after) > 0 {
			out = append(out, events.Stored{Pos: p, Type: t, Prop: id, Data: data})
		}
	}
	if len(r.raw) != 0 {
		return nil, errBadValue
	}
	return out, nil
}

// decodeBase reads a walk's properties from the base's value.
func decodeBase(v []byte) ([]*upstream.Item, error) {
	if len(v) < 1 || v[0] != baseFormat {
		return nil, errBadValue
	}
	raw, err := inflate(v[1:])
	if err != nil {
		return nil, err
	}
	r := reader{raw: raw}
	var items []*upstream.Item
	for len(r.raw) > 0 {
		id, ok := r.id()
		data, ok2 := r.part()
		if !ok || !ok2 {
			return nil, errBadValue
		}
		items = append(items, &upstream.Item{ID: id, JSON: data})
	}
	return items, nil
}

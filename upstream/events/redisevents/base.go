package redisevents

import (
	"bytes"
	"compress/gzip"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/fleet"
)

// The base is the last walk's properties, the next walk's diff's other
// side for whichever member makes it: the format byte (2), the HMAC-SHA256
// under the secret of the key's name, the walk and the payload (32
// bytes), the walk it was written at (Unix ms, 8 bytes big-endian: the
// feed's last walk when its position fields are forged), then the
// payload: gzip of, per property (in the order the PMS listed them), its
// id and its public JSON, each preceded by its length (uvarint). Only the
// property's public JSON is kept: it is what the diff compares and what a
// removed event carries.
const (
	baseFormat = 2
	baseMAC    = sha256.Size
	baseHead   = 1 + baseMAC + 8
)

// errBadBase is a base that does not verify or decode: events.ErrForged.
var errBadBase = fmt.Errorf("redisevents: the shared feed's base does not verify (EDGE_FLEET_SECRET) or decode: %w", events.ErrForged)

func (s *Store) encodeBase(snap *upstream.Snapshot, walk int64) ([]byte, error) {
	var payload bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&payload, gzip.BestSpeed)
	var n [binary.MaxVarintLen64]byte
	if snap == nil {
		snap = upstream.NewSnapshot(nil, time.Time{})
	}
	for _, it := range snap.Loaded() {
		for _, part := range [][]byte{[]byte(it.ID), it.JSON} {
			if _, err := zw.Write(n[:binary.PutUvarint(n[:], uint64(len(part)))]); err != nil {
				return nil, err
			}
			if _, err := zw.Write(part); err != nil {
				return nil, err
			}
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if payload.Len() > s.cfg.MaxBase {
		return nil, fleet.ErrTooLarge
	}
	var w [8]byte
	binary.BigEndian.PutUint64(w[:], uint64(walk))
	frame := make([]byte, 0, baseHead+payload.Len())
	frame = append(frame, baseFormat)
	frame = append(frame, s.baseMAC(w[:], payload.Bytes())...)
	frame = append(frame, w[:]...)
	return append(frame, payload.Bytes()...), nil
}

func (s *Store) baseMAC(walk, payload []byte) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(s.base))
	m.Write(walk)
	m.Write(payload)
	return m.Sum(nil)
}

// decodeBase reads what encodeBase wrote: the walk and the properties;
// anything else (another secret, a truncated frame, more than
// fleet.MaxDecoded bytes inflated, an id that is not a lower-case UUID)
// is errBadBase.
func (s *Store) decodeBase(frame []byte) (int64, []*upstream.Item, error) {
	if len(s.secret) == 0 || len(frame) < baseHead || frame[0] != baseFormat ||
		!hmac.Equal(frame[1:1+baseMAC], s.baseMAC(frame[1+baseMAC:baseHead], frame[baseHead:])) {
		return 0, nil, errBadBase
	}
	walk := int64(binary.BigEndian.Uint64(frame[1+baseMAC : baseHead]))
	zr, err := gzip.NewReader(bytes.NewReader(frame[baseHead:]))
	if err != nil {
		return 0, nil, errBadBase
	}
	raw, err := io.ReadAll(io.LimitReader(zr, fleet.MaxDecoded+1))
	if err != nil || len(raw) > fleet.MaxDecoded {
		return 0, nil, errBadBase
	}
	var items []*upstream.Item
	for len(raw) > 0 {
		var parts [2][]byte
		for k := range parts {
			l, n := binary.Uvarint(raw)
			if n <= 0 || l > uint64(len(raw)-n) {
				return 0, nil, errBadBase
			}
			parts[k], raw = raw[n:n+int(l)], raw[n+int(l):]
		}
		id := string(parts[0])
		if p, ok := mapping.ParseID(id); !ok || p != id {
			return 0, nil, errBadBase
		}
		items = append(items, &upstream.Item{ID: id, JSON: parts[1]})
	}
	return walk, items, nil
}

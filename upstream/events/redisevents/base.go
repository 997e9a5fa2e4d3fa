package redisevents

import (
	"bytes"
	"compress/gzip"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/fleet"
)

// The base is the last walk's properties, the next walk's diff's other
// side for whichever member makes it: the format byte (1), the HMAC-SHA256
// under the secret of the key's name and the payload (32 bytes), then the
// payload: gzip of, per property (in the order the PMS listed them), its id and its public JSON,
// each preceded by its length (uvarint). Only the property's public JSON is
// kept: it is what the diff compares and what a removed event carries.
const (
	baseFormat = 1
	baseMAC    = sha256.Size
)

// errBadBase is a base that does not verify or decode.
var errBadBase = errors.New("redisevents: the shared feed's base does not verify (EDGE_FLEET_SECRET) or decode")

func (s *Store) encodeBase(snap *upstream.Snapshot) ([]byte, error) {
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
	frame := make([]byte, 0, 1+baseMAC+payload.Len())
	frame = append(frame, baseFormat)
	frame = append(frame, s.baseMAC(payload.Bytes())...)
	return append(frame, payload.Bytes()...), nil
}

func (s *Store) baseMAC(payload []byte) []byte {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(s.base))
	m.Write(payload)
	return m.Sum(nil)
}

// decodeBase reads what encodeBase wrote; anything else (another secret,
// a truncated frame, more than fleet.MaxDecoded bytes inflated, an id that
// is not a lower-case UUID) is errBadBase.
func (s *Store) decodeBase(frame []byte) ([]*upstream.Item, error) {
	if len(s.secret) == 0 || len(frame) < 1+baseMAC || frame[0] != baseFormat ||
		!hmac.Equal(frame[1:1+baseMAC], s.baseMAC(frame[1+baseMAC:])) {
		return nil, errBadBase
	}
	zr, err := gzip.NewReader(bytes.NewReader(frame[1+baseMAC:]))
	if err != nil {
		return nil, errBadBase
	}
	raw, err := io.ReadAll(io.LimitReader(zr, fleet.MaxDecoded+1))
	if err != nil || len(raw) > fleet.MaxDecoded {
		return nil, errBadBase
	}
	var items []*upstream.Item
	for len(raw) > 0 {
		var parts [2][]byte
		for k := range parts {
			l, n := binary.Uvarint(raw)
			if n <= 0 || l > uint64(len(raw)-n) {
				return nil, errBadBase
			}
			parts[k], raw = raw[n:n+int(l)], raw[n+int(l):]
		}
		id := string(parts[0])
		if p, ok := mapping.ParseID(id); !ok || p != id {
			return nil, errBadBase
		}
		items = append(items, &upstream.Item{ID: id, JSON: parts[1]})
	}
	return items, nil
}

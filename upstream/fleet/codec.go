package fleet

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
)

// CodecVersion is the first byte of an encoded snapshot.
const CodecVersion = 1

// MaxDecoded bounds the JSON an encoded snapshot may inflate to.
const MaxDecoded = 64 << 20

// ErrCorrupt is a payload that does not decode to valid records.
var ErrCorrupt = errors.New("fleet: corrupt snapshot payload")

// wireProperty is one mapped record on the wire; times in Unix milliseconds.
type wireProperty struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	Code     *string `json:"code,omitempty"`
	Status   string  `json:"status"`
	Timezone string  `json:"tz"`
	Created  int64   `json:"created"`
	Updated  int64   `json:"updated"`
}

// EncodeSnapshot writes props and their load time as: the CodecVersion
// byte, the load time (Unix ms, 8 bytes big-endian), then gzip-compressed
// JSON of the records.
func EncodeSnapshot(props []mapping.Property, loadedAt time.Time) ([]byte, error) {
	wire := make([]wireProperty, len(props))
	for i, p := range props {
		wire[i] = wireProperty{p.ID, p.Name, p.Code, p.Status, p.Timezone, p.CreatedAt.UnixMilli(), p.UpdatedAt.UnixMilli()}
	}
	buf := bytes.NewBuffer(binary.BigEndian.AppendUint64([]byte{CodecVersion}, uint64(loadedAt.UnixMilli())))
	zw := gzip.NewWriter(buf)
	if err := errors.Join(json.NewEncoder(zw).Encode(wire), zw.Close()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DecodeSnapshot reads what EncodeSnapshot wrote. Anything else (another
// version, bad compression, more than MaxDecoded bytes of JSON, a record
// that is not a valid public Property) is ErrCorrupt.
func DecodeSnapshot(b []byte) ([]mapping.Property, time.Time, error) {
	if len(b) < 9 || b[0] != CodecVersion {
		return nil, time.Time{}, ErrCorrupt
	}
	loadedAt := time.UnixMilli(int64(binary.BigEndian.Uint64(b[1:9]))).UTC()
	var raw []byte
	zr, err := gzip.NewReader(bytes.NewReader(b[9:]))
	if err == nil {
		raw, err = io.ReadAll(io.LimitReader(zr, MaxDecoded+1))
	}
	var wire []wireProperty
	if err != nil || len(raw) > MaxDecoded || json.Unmarshal(raw, &wire) != nil {
		return nil, time.Time{}, ErrCorrupt
	}
	props := make([]mapping.Property, len(wire))
	for i, w := range wire {
		if id, ok := mapping.ParseID(w.ID); !ok || id != w.ID || w.Name == "" || w.Timezone == "" ||
			(w.Status != mapping.StatusActive && w.Status != mapping.StatusInactive) {
			return nil, time.Time{}, fmt.Errorf("%w: record %d", ErrCorrupt, i)
		}
		props[i] = mapping.Property{ID: w.ID, Name: w.Name, Code: w.Code, Status: w.Status, Timezone: w.Timezone,
			CreatedAt: time.UnixMilli(w.Created).UTC(), UpdatedAt: time.UnixMilli(w.Updated).UTC()}
	}
	return props, loadedAt, nil
}

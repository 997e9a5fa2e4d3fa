package pmsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// record is one stored record opened for editing: its top-level fields in
// their order, each value as stored. Churn edits a few fields and encodes
// the record again; every other field keeps its bytes.
type record []field

type field struct {
	k string
	v json.RawMessage
}

var errNotObject = errors.New("pmsim: record is not a JSON object")

// openRecord reads rec's top-level fields.
func openRecord(rec json.RawMessage) (record, error) {
	dec := json.NewDecoder(bytes.NewReader(rec))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errNotObject
	}
	var r record
	for dec.More() {
		t, err := dec.Token()
		k, ok := t.(string)
		if err != nil || !ok {
			return nil, errNotObject
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		r = append(r, field{k, v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, errNotObject
	}
	return r, nil
}

// raw is the value of field k; nil when absent.
func (r record) raw(k string) json.RawMessage {
	for _, f := range r {
		if f.k == k {
			return f.v
		}
	}
	return nil
}

// str is the value of field k when it is a string.
func (r record) str(k string) (string, bool) {
	var s string
	if json.Unmarshal(r.raw(k), &s) != nil {
		return "", false
	}
	return s, true
}

// set gives field k the value v (JSON-encoded), in place, or adds it last.
func (r *record) set(k string, v any) {
	b, err := json.Marshal(v)
	if err != nil { // unreachable: strings and numbers only
		panic(err)
	}
	r.setRaw(k, b)
}

func (r *record) setRaw(k string, v json.RawMessage) {
	for i := range *r {
		if (*r)[i].k == k {
			(*r)[i].v = v
			return
		}
	}
	*r = append(*r, field{k, v})
}

// encode is the record's JSON, fields in their order.
func (r record) encode() json.RawMessage {
	n := 2
	for _, f := range r {
		n += len(f.k) + len(f.v) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, f := range r {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(f.k)
		b = append(append(append(b, k...), ':'), f.v...)
	}
	return append(b, '}')
}

// mappable reports whether the edge maps r, as far as churn needs to know
// (docs/pms-api.md section 6): its id a UUID, a name, a known time zone, an
// RFC 3339 creation time; not one of the deliberately broken records.
func (r record) mappable() bool {
	id, _ := r.str("hotel_id")
	name, _ := r.str("display_name")
	zone, _ := r.str("time_zone")
	created, _ := r.str("created_at")
	_, err := time.Parse(time.RFC3339Nano, created)
	return len(id) == 36 && strings.TrimSpace(name) != "" && zone != "" && zone != unknownZone && err == nil
}

// unknownZone is a time zone no tz database knows.
const unknownZone = "Mars/Olympus_Mons"

package mapping

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// The fast path of MapRaw (bench/README.md, "The PMS path"): one pass of a jsontext.Decoder over
// the record, no reflection, and only the strings a Property keeps are
// allocated. It takes the plain records a PMS sends: every known field at
// most once, spelled exactly, its value of the expected JSON type, names
// without escapes. Anything else (a duplicate or differently cased known
// name, an escaped name, a number sent as a string, a type mismatch, a
// syntax error) makes it give up, and MapRaw answers with the
// encoding/json path instead (mapRawStd), so every result, rejections
// included, is exactly encoding/json's (FuzzMapRawMatchesEncodingJSON).

// Known fields of a record, in HotelRecord's order.
const (
	fHotelID = iota
	fBrand
	fName
	fShortCode
	fLegacyCode
	fLifecycle
	fZone
	fCreated
	fModified
	nFields
)

// fieldNames are the JSON names of the known fields, quotes included (the
// form jsontext returns a name in).
var fieldNames = [nFields]string{`"hotel_id"`, `"brand_code"`, `"display_name"`, `"short_code"`,
	`"legacy_property_code"`, `"lifecycle"`, `"time_zone"`, `"created_at"`, `"last_modified_ms"`}

// Kinds of a known field's value in a recordView.
const (
	vAbsent = 0
	vNull   = 'n'
	vString = '"'
	vNumber = '0'
)

// recordView is a record's known fields as byte slices: a string's content
// (unescaped), a number's literal. No value outlives the call it is made in.
type recordView struct {
	val  [nFields][]byte
	kind [nFields]byte
}

// fastDecoder is a pooled jsontext.Decoder reading straight from the
// record's bytes (a bytes.Buffer input is parsed in place, not copied).
type fastDecoder struct {
	dec     jsontext.Decoder
	in      bytes.Buffer
	unquote []byte // unescaped string values
	view    recordView
}

var fastDecoders = sync.Pool{New: func() any { return new(fastDecoder) }}

// Duplicate names are checked here for the known fields only (a
// duplicate known field gives up); jsontext's own check would keep a set
// of every name.
var fastOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true)}

// maxUnquoteKeep bounds the unescaping buffer a pooled decoder keeps.
const maxUnquoteKeep = 4 << 10

// scan fills d.view from raw, or reports false when the record is not one
// the fast path takes (see above).
func (d *fastDecoder) scan(raw []byte) bool {
	d.view = recordView{}
	d.unquote = d.unquote[:0]
	d.in = *bytes.NewBuffer(raw)
	d.dec.Reset(&d.in, fastOptions...)
	defer func() { // hold no record (or page it is a slice of) in the pool
		d.in = bytes.Buffer{}
		d.dec.Reset(&d.in, fastOptions...) // drops the decoder's alias of raw
	}()
	if tok, err := d.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for d.dec.PeekKind() == '"' {
		name, err := d.dec.ReadValue()
		if err != nil {
			return false
		}
		f, ok := FieldIndex(name, fieldNames[:])
		if !ok {
			return false
		}
		v, err := d.dec.ReadValue()
		if err != nil {
			return false
		}
		if f < 0 { // a field the edge does not read: jsontext checked its syntax
			continue
		}
		if d.view.kind[f] != vAbsent {
			return false // encoding/json keeps the last; rare enough to leave to it
		}
		// The value as a slice of raw itself (v may be the decoder's).
		end := d.dec.InputOffset()
		v = raw[end-int64(len(v)) : end]
		switch v[0] {
		case 'n':
			d.view.kind[f] = vNull
		case '"':
			if f == fModified {
				return false // a number in a string: encoding/json's rules
			}
			s := v[1 : len(v)-1]
			if bytes.IndexByte(s, '\\') >= 0 {
				start := len(d.unquote)
				if d.unquote, err = jsontext.AppendUnquote(d.unquote, v); err != nil {
					return false
				}
				s = d.unquote[start:len(d.unquote):len(d.unquote)]
			}
			d.view.kind[f], d.view.val[f] = vString, s
		case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
			if f != fModified {
				return false
			}
			d.view.kind[f], d.view.val[f] = vNumber, v
		default:
			return false // true, false, an object or an array: a type error
		}
	}
	if tok, err := d.dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return false
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return false // anything after the object
	}
	return true
}

// FieldIndex places a quoted object name, as jsontext returns it, among
// names (each quoted the same way): its index in names, -1 for a name that
// is none of them, and false for a name only encoding/json can place:
// escaped, or equal to one of names but for case (encoding/json matches
// names case-insensitively, with Unicode's simple folding, which
// bytes.EqualFold has too). It is the name matching of every jsontext fast
// path that must agree with encoding/json: this file's records, and the
// list pages of upstream's walk.
func FieldIndex(quoted []byte, names []string) (int, bool) {
	for i, n := range names {
		if string(quoted) == n {
			return i, true
		}
	}
	name := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(name, '\\') >= 0 {
		return 0, false
	}
	for _, n := range names {
		if bytes.EqualFold(name, []byte(n[1:len(n)-1])) {
			return 0, false
		}
	}
	return -1, true
}

// mapView maps a record's fields (both paths, Map and the fast path),
// reading bytes, so that only the kept strings are allocated; when want
// refuses the record's id, none but the id (MapRawFor).
func mapView(v *recordView, opts Options, want func(id string) bool) (Property, error) {
	hotelID := string(v.val[fHotelID])
	id, ok := ParseID(hotelID)
	if !ok {
		return Property{}, reject(hotelID, ReasonInvalidID)
	}
	if string(v.val[fBrand]) != opts.Brand {
		return Property{}, reject(hotelID, ReasonOtherBrand)
	}
	nameB := bytes.TrimSpace(v.val[fName])
	if len(nameB) == 0 {
		return Property{}, reject(hotelID, ReasonEmptyName)
	}
	if tooLong(nameB, MaxNameLen) {
		return Property{}, reject(hotelID, ReasonTooLong)
	}
	zone, ok := opts.Zones.lookup(v.val[fZone])
	if !ok {
		return Property{}, reject(hotelID, ReasonInvalidTimeZone)
	}
	created, ok := parseCreatedBytes(v.val[fCreated])
	if !ok {
		return Property{}, reject(hotelID, ReasonInvalidCreatedAt)
	}
	updated := created
	if v.kind[fModified] == vNumber {
		ms, ok := epochMillisBytes(v.val[fModified])
		if !ok {
			return Property{}, reject(hotelID, ReasonInvalidModified)
		}
		updated = time.UnixMilli(ms).UTC()
	}
	var pcode *string
	cf := -1
	switch opts.CodeSource {
	case CodeSourceShortCode:
		cf = fShortCode
	case CodeSourceLegacyCode:
		cf = fLegacyCode
	}
	var codeB []byte
	if cf >= 0 && v.kind[cf] == vString {
		if c := bytes.TrimSpace(v.val[cf]); len(c) > 0 {
			if tooLong(c, MaxCodeLen) {
				return Property{}, reject(hotelID, ReasonTooLong)
			}
			codeB = c
		}
	}
	if want != nil && !want(id) {
		return Property{ID: id}, nil // mapped; nothing else copied
	}
	if codeB != nil {
		s := string(codeB)
		pcode = &s
	}
	status := StatusInactive
	if string(v.val[fLifecycle]) == "LIVE" {
		status = StatusActive
	}
	return Property{
		ID:        id,
		Name:      string(nameB),
		Code:      pcode,
		Status:    status,
		Timezone:  zone,
		CreatedAt: created,
		UpdatedAt: updated,
	}, nil
}

// parseCreatedBytes is parseCreated over bytes. time.Time.UnmarshalText
// takes RFC 3339 by the same parser time.Parse uses for RFC3339Nano, with
// stricter checks after it: what it accepts, time.Parse reads as the same
// instant; what it refuses goes to parseCreated itself.
func parseCreatedBytes(b []byte) (time.Time, bool) {
	var t time.Time
	if err := t.UnmarshalText(b); err != nil {
		return parseCreated(string(b))
	}
	t = t.UTC().Truncate(time.Millisecond)
	if ms := t.UnixMilli(); ms < minMillis || ms > maxMillis {
		return time.Time{}, false
	}
	return t, true
}

// epochMillisBytes is epochMillis over a JSON number's literal. An integer
// of up to 18 digits (well inside int64) is read here; any other number
// goes to epochMillis.
func epochMillisBytes(b []byte) (int64, bool) {
	digits := b
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		digits = b[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return epochMillis(json.Number(b))
	}
	var ms int64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return epochMillis(json.Number(b))
		}
		ms = ms*10 + int64(c-'0')
	}
	if neg {
		ms = -ms
	}
	return ms, ms >= minMillis && ms <= maxMillis
}

// lookup is validZone over bytes, remembered, and returns the name as a
// string the cache already holds when it can, so that a known zone costs
// no allocation.
func (c *ZoneCache) lookup(b []byte) (string, bool) {
	if c == nil {
		s := string(b)
		return s, validZone(s)
	}
	c.mu.Lock()
	e, hit := c.known[string(b)]
	c.mu.Unlock()
	if hit {
		return e.name, e.ok
	}
	s := string(b)
	ok := validZone(s)
	c.mu.Lock()
	if c.known == nil {
		c.known = make(map[string]zoneEntry)
	}
	if len(c.known) < maxZones {
		c.known[s] = zoneEntry{name: s, ok: ok}
	}
	c.mu.Unlock()
	return s, ok
}

// mapRawFastFor is MapRawFor's fast path; ok is false when it gave up.
func mapRawFastFor(raw []byte, opts Options, want func(id string) bool) (p Property, ok bool, err error) {
	d := fastDecoders.Get().(*fastDecoder)
	defer func() {
		d.view = recordView{}
		if cap(d.unquote) > maxUnquoteKeep {
			d.unquote = nil
		}
		fastDecoders.Put(d)
	}()
	if !d.scan(raw) {
		return Property{}, false, nil
	}
	p, err = mapView(&d.view, opts, want)
	return p, true, err
}

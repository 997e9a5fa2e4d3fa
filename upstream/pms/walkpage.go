package pms

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/partner-edge/partner-edge/mapping"
)

// Decoding one list page (bench/README.md, "The PMS path"). encoding/json reads a page twice
// before a record is mapped: it validates the whole body (checkValid), then
// scans every record again to find its end (skip), a third pass being the
// mapping's own; at brand scale those two passes were most of the edge's
// cold start. pageDecoder reads the page once with a jsontext.Decoder and
// hands the records over as slices of the body, as before.
//
// It takes the pages a PMS sends: an object whose names are spelled
// exactly and at most once ("hotels", "nextCursor", any other skipped),
// hotels an array or null, nextCursor a plain string or null, valid UTF-8,
// nothing after the object. Anything else (a name that only differs in
// case, an escaped name, a duplicate, a type mismatch, a syntax error)
// makes it give up, and the page is decoded by encoding/json into a
// listPage as before, so every result, errors included, is exactly
// encoding/json's (FuzzDecodePageMatchesEncodingJSON).

// pageDecoder decodes list pages; one per walk, its buffers reused from
// page to page.
type pageDecoder struct {
	dec  jsontext.Decoder
	in   bytes.Buffer
	recs []bodySlice // the page's records, reused
	std  listPage    // the encoding/json fallback, its records reused
}

// Duplicate names in a record are encoding/json's business (the page's
// own are checked here): jsontext's check would keep a set of every name
// of every record.
var pageOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true)}

// decode parses body, one list page: its records (slices of body, valid
// until the next call), whether it had a hotels array (present, not null),
// and its nextCursor (nil: absent or null). err is encoding/json's error
// for a page that is not the expected JSON.
func (d *pageDecoder) decode(body []byte) (recs []bodySlice, hotels bool, next *string, err error) {
	if recs, hotels, next, ok := d.fast(body); ok {
		return recs, hotels, next, nil
	}
	d.std.Hotels.set, d.std.NextCursor = false, nil
	d.std.Hotels.recs = d.std.Hotels.recs[:0]
	if err := json.Unmarshal(body, &d.std); err != nil {
		return nil, false, nil, err
	}
	return d.std.Hotels.recs, d.std.Hotels.set, d.std.NextCursor, nil
}

// fast is decode in one pass of jsontext; ok is false when it gave up.
func (d *pageDecoder) fast(body []byte) (recs []bodySlice, hotels bool, next *string, ok bool) {
	d.recs = d.recs[:0]
	d.in = *bytes.NewBuffer(body) // parsed in place, not copied
	d.dec.Reset(&d.in, pageOptions...)
	defer func() { // keep no alias of the page between pages
		d.in = bytes.Buffer{}
		d.dec.Reset(&d.in, pageOptions...)
	}()
	if tok, err := d.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false, nil, false
	}
	var seenHotels, seenCursor bool
	for d.dec.PeekKind() == '"' {
		name, err := d.dec.ReadValue()
		if err != nil {
			return nil, false, nil, false
		}
		switch field := pageField(name); field {
		case fieldOther:
			if _, err := d.dec.ReadValue(); err != nil {
				return nil, false, nil, false
			}
		case fieldUnsure:
			return nil, false, nil, false
		case fieldHotels:
			if seenHotels {
				return nil, false, nil, false
			}
			seenHotels = true
			switch d.dec.PeekKind() {
			case 'n':
				if _, err := d.dec.ReadToken(); err != nil {
					return nil, false, nil, false
				}
			case '[':
				if !d.records(body) {
					return nil, false, nil, false
				}
				hotels = true
			default:
				return nil, false, nil, false // a type error: encoding/json words it
			}
		case fieldCursor:
			if seenCursor {
				return nil, false, nil, false
			}
			seenCursor = true
			v, err := d.dec.ReadValue()
			if err != nil {
				return nil, false, nil, false
			}
			switch {
			case v[0] == 'n':
			case v[0] == '"' && plainString(v):
				s := string(v[1 : len(v)-1])
				next = &s
			default:
				return nil, false, nil, false
			}
		}
	}
	if tok, err := d.dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return nil, false, nil, false
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return nil, false, nil, false // anything after the object
	}
	return d.recs, hotels, next, true
}

// records reads the hotels array (its '[' next) into d.recs.
func (d *pageDecoder) records(body []byte) bool {
	if _, err := d.dec.ReadToken(); err != nil {
		return false
	}
	for d.dec.PeekKind() != ']' {
		v, err := d.dec.ReadValue()
		if err != nil {
			return false
		}
		// The record as a slice of body itself (v may be the decoder's).
		end := d.dec.InputOffset()
		d.recs = append(d.recs, bodySlice(body[end-int64(len(v)):end:end]))
	}
	_, err := d.dec.ReadToken()
	return err == nil
}

// The names of a page's fields, as pageField places them.
const (
	fieldOther  = iota // a field the walk does not read
	fieldUnsure        // escaped, or a known name but for case: encoding/json's to place
	fieldHotels
	fieldCursor
)

// pageNames are the names the walk reads, quoted, in the order of
// fieldHotels and fieldCursor.
var pageNames = [...]string{`"hotels"`, `"nextCursor"`}

// pageField places a quoted object name as jsontext returns it, by
// encoding/json's rules (mapping.FieldIndex).
func pageField(quoted []byte) int {
	i, ok := mapping.FieldIndex(quoted, pageNames[:])
	switch {
	case !ok:
		return fieldUnsure
	case i < 0:
		return fieldOther
	}
	return fieldHotels + i
}

// plainString reports whether a quoted JSON string has neither escapes nor
// bytes outside printable ASCII: its content is then its value.
func plainString(quoted []byte) bool {
	for _, c := range quoted[1 : len(quoted)-1] {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

// listPage is the list envelope. A pointer tells a missing nextCursor from
// null; hotels says whether it was there (and not null) itself.
type listPage struct {
	Hotels     hotelsField `json:"hotels"`
	NextCursor *string     `json:"nextCursor"`
}

// hotelsField is the hotels array of a page: set when present and not
// null; recs is reused from page to page, so a walk's garbage stays small
// (the records themselves are slices of the page's buffer: bodySlice).
type hotelsField struct {
	set  bool
	recs []bodySlice
}

func (h *hotelsField) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	h.recs, h.set = h.recs[:0], true // on an error the page fails whole
	return json.Unmarshal(data, &h.recs)
}

// bodySlice is a record as a slice of the page body it came in, not a copy
// (json.RawMessage copies): a page's records cost no garbage of their
// size. encoding/json hands UnmarshalJSON a slice of its input, which the
// walk owns and reuses only for the next page, after every record of this
// one was handed over. This is the fallback of a page the one-pass
// decoder (walkpage.go) does not take.
type bodySlice []byte

func (b *bodySlice) UnmarshalJSON(data []byte) error { *b = data; return nil }

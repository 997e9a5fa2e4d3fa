package pmscheck

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/partner-edge/partner-edge/mapping"
)

// Census counts, over the records of one walk, which top-level fields
// each record carries and of which JSON type, so that a drift report can
// name the cause behind the rejections (docs/pms-changes.md, "`edge pms
// check`": Drift). It keeps counts and at most maxUnknownFields names,
// never a value.
type Census struct {
	records int
	read    []string // the optional fields the mapping reads
	fields  map[string]*fieldCount
	unknown int // names outside docs/pms-api.md in fields
	dec     jsontext.Decoder
	in      bytes.Reader
}

// fieldCount is one field's records, by JSON type ('"', '0', '{', '[',
// 't' for true and false, 'n').
type fieldCount struct {
	present int
	kinds   map[jsontext.Kind]int
}

// maxUnknownFields bounds the names of fields outside docs/pms-api.md the
// census counts: a PMS cannot grow it with a new name per record.
const maxUnknownFields = 64

// recordFields are the fields of docs/pms-api.md section 5 with the JSON
// types it allows, and whether every record carries them.
var recordFields = map[string]struct {
	kinds    string // allowed jsontext kinds
	want     string // the types, as the report says them
	required bool
}{
	"hotel_id":             {`"`, "string", true},
	"brand_code":           {`"`, "string", true},
	"display_name":         {`"`, "string", true},
	"lifecycle":            {`"`, "string", true},
	"created_at":           {`"`, "string", true},
	"short_code":           {`"n`, "string or null", false},
	"legacy_property_code": {`"n`, "string or null", false},
	"time_zone":            {`"n`, "string or null", false},
	"last_modified_ms":     {`0n`, "integer or null", false},
	"internal":             {`{`, "object", false},
}

// NewCensus returns a census for a mapping of code source cs (which
// decides the optional fields the mapping reads).
func NewCensus(cs mapping.CodeSource) *Census {
	read := []string{"time_zone", "last_modified_ms"} // the required fields are in schema/hotel.json
	if cs == mapping.CodeSourceShortCode || cs == mapping.CodeSourceLegacyCode {
		read = append(read, string(cs))
	}
	return &Census{read: read, fields: map[string]*fieldCount{}}
}

// Add counts one record as the PMS sent it. A record that is not a JSON
// object counts as a record carrying no field. It reuses one decoder and
// allocates nothing for a name it has counted before: the shadow walk
// calls it for every record, and its garbage counts against the walk's
// memory (docs/contract.md section 17).
func (c *Census) Add(raw []byte) {
	c.records++
	c.in.Reset(raw)
	c.dec.Reset(&c.in, censusOptions...)
	defer c.in.Reset(nil) // keep no alias of the page
	if tok, err := c.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return
	}
	for c.dec.PeekKind() == '"' {
		quoted, err := c.dec.ReadValue()
		if err != nil {
			return
		}
		name := quoted[1 : len(quoted)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			if name, err = jsontext.AppendUnquote(nil, quoted); err != nil {
				return
			}
		}
		// name is valid until the decoder's next call: looked up (no
		// allocation) and, when new, copied before anything else.
		fc := c.fields[string(name)]
		if _, known := recordFields[string(name)]; fc == nil && (known || c.unknown < maxUnknownFields) {
			fc = &fieldCount{kinds: map[jsontext.Kind]int{}}
			c.fields[string(name)] = fc
			if !known {
				c.unknown++
			}
		}
		kind := c.dec.PeekKind()
		if kind == 'f' {
			kind = 't'
		}
		if err := c.dec.SkipValue(); err != nil {
			return
		}
		if fc != nil {
			fc.present++
			fc.kinds[kind]++
		}
	}
}

// censusOptions accept what encoding/json accepts, built once.
var censusOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// present is how many records carry the field name.
func (c *Census) present(name string) int {
	if fc := c.fields[name]; fc != nil {
		return fc.present
	}
	return 0
}

// Drift is one change of the records' shape that the census found.
type Drift struct {
	// Field is the field of docs/pms-api.md that changed.
	Field string `json:"field"`
	// Change is "missing" (absent from Records records; Appeared names
	// the fields outside docs/pms-api.md found instead) or "retyped"
	// (present in Records records with another JSON type, Types).
	Change  string `json:"change"`
	Records int    `json:"records"`
	// Types are the JSON types found instead of Want (retyped).
	Types    []string `json:"types,omitempty"`
	Want     string   `json:"want,omitempty"`
	Appeared []Field  `json:"appeared,omitempty"`
	// Message says it in a sentence.
	Message string `json:"message"`
}

// Field is a field outside docs/pms-api.md and the records carrying it.
type Field struct {
	Name    string `json:"name"`
	Records int    `json:"records"`
}

// kindNames are the JSON types of jsontext's kinds.
var kindNames = map[jsontext.Kind]string{'"': "string", '0': "number", '{': "object", '[': "array", 't': "boolean", 'n': "null"}

// Drift lists what changed (docs/pms-changes.md, "`edge pms check`"): a
// field missing (every required one; a read optional one when absent from
// all of at least fieldsSeenMin records) with what appeared instead, or
// retyped.
func (c *Census) Drift() []Drift {
	out := []Drift{}
	for _, name := range slices.Sorted(maps.Keys(recordFields)) {
		spec, present, fc := recordFields[name], c.present(name), c.fields[name]
		if missing := c.records - present; missing > 0 && (spec.required || present == 0 && c.records >= fieldsSeenMin && slices.Contains(c.read, name)) {
			appeared := c.renamedTo(spec.kinds)
			d := Drift{Field: name, Change: "missing", Records: missing, Appeared: appeared,
				Message: fmt.Sprintf("field `%s` missing in %s", name, records(missing))}
			for _, a := range appeared {
				d.Message += fmt.Sprintf(", a field `%s` appeared in %s", a.Name, records(a.Records))
			}
			out = append(out, d)
		}
		if fc == nil {
			continue
		}
		wrong := 0
		var types []string
		for k, n := range fc.kinds {
			if !strings.ContainsRune(spec.kinds, rune(k)) {
				wrong += n
				types = append(types, kindNames[k])
			}
		}
		if wrong > 0 {
			slices.Sort(types)
			out = append(out, Drift{Field: name, Change: "retyped", Records: wrong, Types: types, Want: spec.want,
				Message: fmt.Sprintf("field `%s` is %s in %s, want %s", name, strings.Join(types, " or "), records(wrong), spec.want)})
		}
	}
	return out
}

// renamedTo lists the fields outside docs/pms-api.md whose values are all
// of the JSON types kinds allows: what a missing field of that type may
// have been renamed to (a PMS's own extensions of other types, an array
// of amenities say, are not), most records first, at most three.
func (c *Census) renamedTo(kinds string) []Field {
	var out []Field
	for name, fc := range c.fields {
		if _, known := recordFields[name]; known {
			continue
		}
		fits := true
		for k := range fc.kinds {
			fits = fits && strings.ContainsRune(kinds, rune(k))
		}
		if fits {
			out = append(out, Field{Name: name, Records: fc.present})
		}
	}
	slices.SortFunc(out, func(a, b Field) int { return cmp.Or(cmp.Compare(b.Records, a.Records), cmp.Compare(a.Name, b.Name)) })
	return out[:min(len(out), 3)]
}

// records says n records.
func records(n int) string {
	if n == 1 {
		return "1 record"
	}
	return fmt.Sprintf("%d records", n)
}

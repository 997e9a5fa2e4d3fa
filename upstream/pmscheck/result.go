package pmscheck

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
)

// ResultVersion is the format version of a saved Result.
const ResultVersion = 1

// Result is what partners would see of one PMS walk: every property the
// mapping produced (listed when active, readable by id either way) in its
// public JSON, and the records left out with their reasons. It holds no
// internal value: only public fields, ids and reason codes. It is the file
// of edge pms check --save and --baseline. (The shadow candidate builds
// none: it feeds a Comparer as it walks.)
type Result struct {
	Version    int    `json:"version"`
	Brand      string `json:"brand"`
	Mode       string `json:"mode"`
	CodeSource string `json:"codeSource"`
	// Properties are the public Property objects, ordered by id.
	Properties []json.RawMessage `json:"properties"`
	// Rejected are the records the mapping left out, ordered by id.
	Rejected []Rejected `json:"rejected"`
}

// Rejected is one record the mapping left out: its id as the PMS sent it
// (clipped to 64 bytes) and the reason.
type Rejected struct {
	ID     string         `json:"id"`
	Reason mapping.Reason `json:"reason"`
}

// NewResult builds the Result of mapped items and rejections. Items are
// encoded as the edge serves them (upstream.Item.JSON).
func NewResult(brand, mode string, cs mapping.CodeSource, items []*upstream.Item, rejected []*mapping.Rejection) *Result {
	r := &Result{Version: ResultVersion, Brand: brand, Mode: mode, CodeSource: string(cmp.Or(cs, mapping.CodeSourceNone)),
		Properties: make([]json.RawMessage, 0, len(items)), Rejected: make([]Rejected, 0, len(rejected))}
	for _, it := range slices.SortedFunc(slices.Values(items), func(a, b *upstream.Item) int { return cmp.Compare(a.ID, b.ID) }) {
		r.Properties = append(r.Properties, json.RawMessage(it.JSON))
	}
	for _, rj := range rejected {
		r.Rejected = append(r.Rejected, Rejected{ID: rj.HotelID, Reason: rj.Reason})
	}
	slices.SortFunc(r.Rejected, func(a, b Rejected) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Reason, b.Reason))
	})
	return r
}

// LoadResult reads a Result written by SaveFile. Unknown fields and other
// versions are errors: a baseline is compared field by field.
func LoadResult(rd io.Reader) (*Result, error) {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("not a saved check result: %w", err)
	}
	if r.Version != ResultVersion {
		return nil, fmt.Errorf("saved check result version %d, want %d", r.Version, ResultVersion)
	}
	for i, p := range r.Properties {
		if _, err := propertyID(p); err != nil {
			return nil, fmt.Errorf("property %d: %w", i, err)
		}
	}
	return &r, nil
}

func propertyID(p json.RawMessage) (string, error) {
	var probe struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(p, &probe); err != nil || probe.ID == "" {
		return "", errors.New("not a property object with an id")
	}
	return probe.ID, nil
}

// Diff is what changed for partners from one Result (the base) to another.
// Every list is ordered by id.
type Diff struct {
	// Added: properties partners see now and did not before.
	Added []string `json:"added"`
	// Removed: properties partners saw before whose record is gone.
	Removed []string `json:"removed"`
	// Changed: properties in both whose public fields differ.
	Changed []Change `json:"changed"`
	// Rejected: properties partners saw before whose record is now left
	// out by the mapping (the reason says why).
	Rejected []Rejected `json:"rejected"`
}

// Change names the public fields of one property that differ.
type Change struct {
	ID     string   `json:"id"`
	Fields []string `json:"fields"`
}

// Breaking reports whether partners lose a property they saw: one removed,
// or one now rejected. Added and changed properties are data changes.
func (d *Diff) Breaking() bool { return len(d.Removed) > 0 || len(d.Rejected) > 0 }

// Empty reports whether nothing differs.
func (d *Diff) Empty() bool {
	return len(d.Added) == 0 && len(d.Removed) == 0 && len(d.Changed) == 0 && len(d.Rejected) == 0
}

// Compare lists what partners would see differently in cur than in base.
// A property that maps in base and whose record cur rejects is Rejected,
// not Removed; a record rejected in both is no difference. It feeds cur to
// a Comparer of base (a duplicate id of either side: its last property).
func Compare(base, cur *Result) *Diff {
	b := index(base.Properties)
	items := make([]*upstream.Item, 0, len(b))
	for _, id := range slices.Sorted(maps.Keys(b)) {
		items = append(items, &upstream.Item{ID: id, JSON: b[id]})
	}
	c := NewComparer(items)
	for id, p := range index(cur.Properties) { // Mapped of properties already encoded
		if i, ok := c.first(id); ok {
			c.compare(i, p)
		}
	}
	for _, r := range cur.Rejected {
		c.Rejected(r.ID, r.Reason)
	}
	return c.Diff()
}

func index(props []json.RawMessage) map[string]json.RawMessage {
	m := make(map[string]json.RawMessage, len(props))
	for _, p := range props {
		if id, err := propertyID(p); err == nil {
			m[id] = p
		}
	}
	return m
}

// publicOrder is the field order of the public Property
// (docs/partner-api.md section 2.1); fields outside it sort after, by name.
var publicOrder = []string{"object", "id", "name", "code", "status", "timezone", "createdAt", "updatedAt"}

// changedFields names the public fields whose values differ between two
// property objects.
func changedFields(a, b json.RawMessage) []string {
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return []string{"(unreadable)"}
	}
	var out []string
	for k, va := range ma {
		if vb, ok := mb[k]; !ok || !jsonEqual(va, vb) {
			out = append(out, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			out = append(out, k)
		}
	}
	rank := func(f string) uint { return uint(slices.Index(publicOrder, f)) } // -1, outside: last
	slices.SortFunc(out, func(x, y string) int { return cmp.Or(cmp.Compare(rank(x), rank(y)), cmp.Compare(x, y)) })
	return out
}

func jsonEqual(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// SaveFile writes r to path (created or truncated), as indented JSON, for a
// later baseline.
func (r *Result) SaveFile(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o666)
}

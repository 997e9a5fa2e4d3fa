package pmsim

import (
	"fmt"
	"slices"
	"strings"
)

// Drift makes the Sim play a PMS whose backend team changed something, so
// tests and demos can show what the edge's contract check (edge pms check)
// and shadow candidate report. The zero value changes nothing.
//
// Rename, Retype and Drop change the generated records (every route serves
// the changed ones; records given to SetRecords are served as given).
// Paging changes list answers only.
type Drift struct {
	// Rename renames top-level record fields, old name to new name, e.g.
	// {"display_name": "name"}: the record keeps the value under the new
	// name. Nil renames nothing.
	Rename map[string]string
	// Retype changes the JSON type of these top-level record fields: a
	// number becomes a string of its digits, a string becomes an object
	// {"value": s}, true and false become "true" and "false"; null and
	// absent fields stay as they are. Nil changes nothing.
	Retype []string
	// Drop leaves out this many mappable records of every brand (the
	// first ones generated; never the unmappable ones), as a PMS that
	// lost them. Zero drops nothing; more than there are drops them all.
	Drop int
	// Paging breaks the list walk (Paging* constants). Empty: healthy
	// paging. With Paging set and Config.PageSize 0, pages hold at most
	// DriftPageSize records, so the walk has pages to break.
	Paging string
}

// The Drift.Paging modes.
const (
	// PagingLoop: every page after the first hands back the cursor that
	// led to it, so a walk never ends (a cursor loop).
	PagingLoop = "loop"
	// PagingEmptyCursor: the last page says "nextCursor": "" instead of
	// null.
	PagingEmptyCursor = "empty-cursor"
	// PagingOverlap: each next page starts one record before the end of
	// the page just served, so every page boundary lists a record twice.
	PagingOverlap = "overlap"
	// PagingRenameCursor: the envelope calls the cursor "next_cursor", so
	// a client reading "nextCursor" stops after the first page.
	PagingRenameCursor = "rename-cursor"
)

// PagingModes lists the Drift.Paging values.
var PagingModes = []string{PagingLoop, PagingEmptyCursor, PagingOverlap, PagingRenameCursor}

// DriftPageSize caps list pages when Drift.Paging is set and
// Config.PageSize is 0.
const DriftPageSize = 10

// Validate reports a Drift that cannot be played.
func (d Drift) Validate() error {
	if d.Drop < 0 {
		return fmt.Errorf("drift: drop %d: want 0 or more", d.Drop)
	}
	if d.Paging != "" && !slices.Contains(PagingModes, d.Paging) {
		return fmt.Errorf("drift: paging %q: want one of %s", d.Paging, strings.Join(PagingModes, ", "))
	}
	for from, to := range d.Rename {
		if from == "" || to == "" {
			return fmt.Errorf("drift: rename %q to %q: want two non-empty names", from, to)
		}
	}
	return nil
}

// ParseRenames reads "old=new,old2=new2" into a Rename map.
func ParseRenames(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for part := range strings.SplitSeq(s, ",") {
		from, to, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || from == "" || to == "" {
			return nil, fmt.Errorf("rename %q: want old=new", part)
		}
		out[from] = to
	}
	return out, nil
}

// apply changes one generated record.
func (d Drift) apply(rec object) object {
	if len(d.Rename) == 0 && len(d.Retype) == 0 {
		return rec
	}
	out := make(object, 0, len(rec))
	for _, f := range rec {
		if slices.Contains(d.Retype, f.k) {
			f.v = retype(f.v)
		}
		if to, ok := d.Rename[f.k]; ok {
			f.k = to
		}
		out = append(out, f)
	}
	return out
}

// retype turns v into a value of another JSON type.
func retype(v any) any {
	switch x := v.(type) {
	case string:
		return object{{"value", x}}
	case nil:
		return nil
	}
	return fmt.Sprint(v) // numbers and booleans: their text; objects and arrays: a string
}

// nextOffset is where the page after one served at offset with n records
// starts, under the paging drift.
func (d Drift) nextOffset(offset, n int) int {
	switch {
	case d.Paging == PagingLoop && offset > 0:
		return offset
	case d.Paging == PagingOverlap && n > 1:
		return offset + n - 1
	}
	return offset + n
}

// cursorKey is the envelope's name of the next cursor.
func (d Drift) cursorKey() string {
	if d.Paging == PagingRenameCursor {
		return "next_cursor"
	}
	return "nextCursor"
}

package events

import (
	"bytes"
	"strings"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
)

// Type is what happened to a property.
type Type uint8

// The event types of docs/contract.md section 23.
const (
	Created Type = iota + 1 // a new id, or a record that maps again
	Updated                 // any field of the public Property changed, status included
	Removed                 // the id is gone, or its record no longer maps
)

// Types lists every type, in order: the values of the metrics' type label.
var Types = []Type{Created, Updated, Removed}

// String is the type as partners read it ("property.created", ...).
func (t Type) String() string {
	switch t {
	case Created:
		return "property.created"
	case Updated:
		return "property.updated"
	case Removed:
		return "property.removed"
	}
	return "unknown"
}

// Change is one event of a walk before it has a position: its type and
// the property (for Removed, the last one served).
type Change struct {
	Type Type
	Item *upstream.Item
}

// Diff returns the changes from prev to next, both ordered by id as
// Snapshot.All returns them, in id order: one pass over both, comparing
// each property's public JSON (docs/contract.md section 23: any difference
// in what a partner gets is an update). Nil prev is no previous walk: no
// changes (the baseline).
func Diff(prev, next []*upstream.Item) []Change {
	if prev == nil {
		return nil
	}
	var out []Change
	i, j := 0, 0
	for i < len(prev) || j < len(next) {
		switch {
		case j == len(next) || (i < len(prev) && prev[i].ID < next[j].ID):
			out = append(out, Change{Removed, prev[i]})
			i++
		case i == len(prev) || next[j].ID < prev[i].ID:
			out = append(out, Change{Created, next[j]})
			j++
		default:
			if !bytes.Equal(prev[i].JSON, next[j].JSON) {
				out = append(out, Change{Updated, next[j]})
			}
			i, j = i+1, j+1
		}
	}
	return out
}

// sortedByID reports whether items are in strictly increasing id order, as
// Diff needs them.
func sortedByID(items []*upstream.Item) bool {
	for k := 1; k < len(items); k++ {
		if strings.Compare(items[k-1].ID, items[k].ID) >= 0 {
			return false
		}
	}
	return true
}

// appendEvent appends the Event object of docs/partner-api.md: id, type,
// occurredAt (the walk's time) and the property's JSON as data. Every
// member of a fleet writes the same bytes for the same stored event.
func appendEvent(b []byte, id string, t Type, walk int64, data []byte) []byte {
	b = append(b, `{"object":"event","id":"`...)
	b = append(b, id...)
	b = append(b, `","type":"`...)
	b = append(b, t.String()...)
	b = append(b, `","occurredAt":"`...)
	b = mapping.AppendTime(b, time.UnixMilli(walk))
	b = append(b, `","data":`...)
	b = append(b, data...)
	return append(b, '}')
}

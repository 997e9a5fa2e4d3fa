package events

import (
	"bytes"
	"slices"
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

// Diff returns the changes from prev to next, ordered by property id,
// comparing each property's public JSON (docs/contract.md section 23: any
// difference in what a partner gets is an update). Nil prev is no previous
// walk: no changes (the baseline). The two walks are compared in the order
// the PMS listed them, in one pass, looking up only the ids out of step
// (created or removed); a PMS that listed them in another order is
// compared id by id. Nothing is sorted but the changes.
func Diff(prev, next *upstream.Snapshot) []Change {
	if prev == nil {
		return nil
	}
	out, ok := diffInOrder(prev, next)
	if !ok {
		out = diffByID(prev, next)
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Item.ID, b.Item.ID) })
	return out
}

// diffInOrder is Diff over both walks in the PMS's order; false when the
// order changed (an id present in both is out of step).
func diffInOrder(prev, next *upstream.Snapshot) ([]Change, bool) {
	p, n := prev.Loaded(), next.Loaded()
	var out []Change
	for i, j := 0, 0; i < len(p) || j < len(n); {
		switch {
		case i < len(p) && j < len(n) && p[i].ID == n[j].ID:
			if !bytes.Equal(p[i].JSON, n[j].JSON) {
				out = append(out, Change{Updated, n[j]})
			}
			i, j = i+1, j+1
		case j < len(n) && !has(prev, n[j].ID):
			out, j = append(out, Change{Created, n[j]}), j+1
		case i < len(p) && !has(next, p[i].ID):
			out, i = append(out, Change{Removed, p[i]}), i+1
		default:
			return nil, false
		}
	}
	return out, true
}

func has(s *upstream.Snapshot, id string) bool {
	_, ok := s.Get(id)
	return ok
}

// diffByID is Diff by lookups: each property of next in prev, and, unless
// every one of prev was found so, each of prev in next.
func diffByID(prev, next *upstream.Snapshot) []Change {
	var out []Change
	found := 0
	for _, it := range next.Loaded() {
		old, ok := prev.Get(it.ID)
		switch {
		case !ok:
			out = append(out, Change{Created, it})
			continue
		case !bytes.Equal(old.JSON, it.JSON):
			out = append(out, Change{Updated, it})
		}
		found++
	}
	if found == len(prev.Loaded()) {
		return out // none removed
	}
	for _, it := range prev.Loaded() {
		if !has(next, it.ID) {
			out = append(out, Change{Removed, it})
		}
	}
	return out
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

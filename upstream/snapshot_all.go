package upstream

import (
	"cmp"
	"maps"
	"slices"

	"github.com/partner-edge/partner-edge/mapping"
)

// All returns every mappable property of the snapshot, active or not,
// ordered by id: for comparing two snapshots property by property (edge pms
// check, the shadow candidate). The items are shared: never modify them.
func (s *Snapshot) All() []*Item {
	return slices.SortedFunc(maps.Values(s.byID), func(a, b *Item) int { return cmp.Compare(a.ID, b.ID) })
}

// ItemsByID encodes every mapped record (NewItem), ordered by id, the
// first of a duplicate id kept: All of their Snapshot without building one
// (no index, no joined JSON).
func ItemsByID(props []mapping.Property) []*Item {
	out := make([]*Item, len(props))
	for i, p := range props {
		out[i] = NewItem(p)
	}
	slices.SortStableFunc(out, func(a, b *Item) int { return cmp.Compare(a.ID, b.ID) })
	return slices.CompactFunc(out, func(a, b *Item) bool { return a.ID == b.ID })
}

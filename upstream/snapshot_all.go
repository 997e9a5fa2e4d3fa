package upstream

import (
	"cmp"
	"slices"
)

// All returns every mappable property of the snapshot, active or not,
// ordered by id: for comparing two snapshots property by property (edge pms
// check, the shadow candidate). The items are shared: never modify them.
func (s *Snapshot) All() []*Item {
	out := make([]*Item, 0, len(s.byID))
	for _, it := range s.byID {
		out = append(out, it)
	}
	slices.SortFunc(out, func(a, b *Item) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

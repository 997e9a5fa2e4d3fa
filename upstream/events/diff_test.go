package events

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
)

// changesOf is a diff as "type id" lines.
func changesOf(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Type.String()+" "+c.Item.ID)
	}
	return out
}

// Diff in the PMS's order agrees with the diff id by id whatever the
// edits: renames, removals, insertions anywhere, replacements in place,
// and a new order (then it falls back to lookups).
func TestDiffInOrderAgreesWithByID(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 300 {
		n := rng.IntN(30)
		var before []mapping.Property
		for i := range n {
			before = append(before, prop(i, fmt.Sprint("P", i), "active"))
		}
		after := slices.Clone(before)
		next := n
		for range rng.IntN(5) {
			switch op := rng.IntN(5); {
			case op == 0 && len(after) > 0: // rename
				k := rng.IntN(len(after))
				after[k].Name += " x"
			case op == 1 && len(after) > 0: // remove
				k := rng.IntN(len(after))
				after = slices.Delete(after, k, k+1)
			case op == 2: // insert
				after = slices.Insert(after, rng.IntN(len(after)+1), prop(next, "New", "inactive"))
				next++
			case op == 3 && len(after) > 0: // replace in place
				after[rng.IntN(len(after))] = prop(next, "Replaced", "active")
				next++
			case op == 4 && len(after) > 1 && round%3 == 0: // another order
				rng.Shuffle(len(after), func(a, b int) { after[a], after[b] = after[b], after[a] })
			}
		}
		p, q := snap(t0, before...), snap(t0.Add(time.Minute), after...)
		want := diffByID(p, q)
		slices.SortFunc(want, func(a, b Change) int { return strings.Compare(a.Item.ID, b.Item.ID) })
		if got := Diff(p, q); !slices.Equal(changesOf(got), changesOf(want)) {
			t.Fatalf("round %d: Diff %v; by id %v", round, changesOf(got), changesOf(want))
		}
	}
	if Diff(nil, snap(t0, prop(1, "A", "active"))) != nil {
		t.Error("a diff without a previous walk made changes")
	}
}

// A walk in another order is still diffed right, by lookups.
func TestDiffReordered(t *testing.T) {
	a, b, c := prop(1, "A", "active"), prop(2, "B", "active"), prop(3, "C", "active")
	b2 := b
	b2.Status = mapping.StatusInactive
	got := changesOf(Diff(snap(t0, a, b, c), snap(t0, c, b2, a)))
	if !slices.Equal(got, []string{"property.updated " + b.ID}) {
		t.Errorf("reordered walk: %v", got)
	}
	if _, ok := diffInOrder(snap(t0, a, b, c), snap(t0, c, b2, a)); ok {
		t.Error("diffInOrder took a new order for the same one")
	}
}

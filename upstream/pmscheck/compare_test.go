package pmscheck

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
)

// TestComparerFedAsAWalkMatchesCompare: a Comparer fed a walk one record
// at a time, in the walk's order, says what Compare says of the whole
// walk's Result (every mapped property kept, the first of a duplicate id,
// and every rejection): the same added, removed, changed and rejected, in
// the same order, and the same count of candidate properties. The walks
// mix duplicates, upper-case ids, live ids rejected for several reasons
// (alone and beside a property of the same id) and ids of no live
// property.
func TestComparerFedAsAWalkMatchesCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 5))
	id := func(n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n*7) }
	prop := func(n, variant int) mapping.Property {
		p := mapping.Property{ID: id(n), Name: fmt.Sprintf("Hotel %d", n), Status: mapping.StatusActive, Timezone: "UTC",
			CreatedAt: time.Unix(int64(n), 0).UTC(), UpdatedAt: time.Unix(int64(n), 0).UTC()}
		switch variant {
		case 1:
			p.Name += " renamed"
		case 2:
			p.Status, p.Timezone = mapping.StatusInactive, "Europe/Paris"
		}
		return p
	}
	reasons := []mapping.Reason{mapping.ReasonEmptyName, mapping.ReasonInvalidTimeZone, mapping.ReasonTooLong}
	for round := range 200 {
		var base []*upstream.Item
		for n := range 40 {
			if rng.IntN(4) > 0 {
				base = append(base, upstream.NewItem(prop(n, 0)))
			}
		}
		c := NewComparer(base)
		var props []mapping.Property
		var rejected []*mapping.Rejection
		for range 60 {
			n := rng.IntN(60) // 40 and over: no live property has it
			switch rng.IntN(3) {
			case 0, 1:
				p := prop(n, rng.IntN(3))
				props = append(props, p)
				c.Mapped(p)
			default:
				sent := id(n)
				if rng.IntN(2) == 0 {
					sent = strings.ToUpper(sent)
				}
				rj := &mapping.Rejection{HotelID: sent, Reason: reasons[rng.IntN(len(reasons))]}
				rejected = append(rejected, rj)
				c.Rejected(rj.HotelID, rj.Reason)
			}
		}
		whole := NewResult("aurora", "live", "", upstream.ItemsByID(props), rejected)
		want := Compare(NewResult("aurora", "live", "", base, nil), whole)
		if got := c.Diff(); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: fed one record at a time %+v; whole walk %+v", round, got, want)
		}
		if got := c.Properties(); got != len(whole.Properties) {
			t.Fatalf("round %d: %d candidate properties, whole walk %d", round, got, len(whole.Properties))
		}
	}
}

// TestComparerKeepsItsDifferencesOnly: what a Comparer keeps grows with
// each distinct added id, and not with a duplicate, a property equal to
// its base one or a rejection of an id base lacks: a walk of a candidate
// of any size counts this against its bound.
func TestComparerKeepsItsDifferencesOnly(t *testing.T) {
	live := mapping.Property{ID: "00000000-0000-4000-8000-000000000001", Name: "Live", Status: mapping.StatusActive, Timezone: "UTC"}
	c := NewComparer([]*upstream.Item{upstream.NewItem(live)})
	for i := range 1000 {
		c.Mapped(live)
		c.Rejected(fmt.Sprintf("not-a-live-id-%d", i), mapping.ReasonInvalidID)
	}
	if c.Kept() != 0 {
		t.Fatalf("kept %d bytes for no difference", c.Kept())
	}
	added := live
	for i := range 1000 {
		added.ID = fmt.Sprintf("%08x-0000-4000-8000-000000000000", i+2)
		c.Mapped(added)
		c.Mapped(added)
	}
	if k := c.Kept(); k < 1000*keptAddedUUID || k > 1000*keptAddedUUID {
		t.Fatalf("kept %d bytes for 1000 added ids; want %d", k, 1000*keptAddedUUID)
	}
	if d := c.Diff(); len(d.Added) != 1000 || d.Added[0] != "00000002-0000-4000-8000-000000000000" || c.Properties() != 1001 {
		t.Fatalf("added %d (first %q), %d properties", len(d.Added), d.Added[0], c.Properties())
	}
}

package pmsim

import (
	"encoding/json"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// mapped maps every record of brand as the edge does: id to property.
func mapped(t *testing.T, s *Sim, brand string) (map[string]mapping.Property, []string) {
	t.Helper()
	out := map[string]mapping.Property{}
	var order []string // hotel_id of each slot
	for _, raw := range s.Records(brand) {
		var probe struct {
			ID string `json:"hotel_id"`
		}
		_ = json.Unmarshal(raw, &probe)
		order = append(order, probe.ID)
		if p, err := mapping.MapRaw(raw, mapping.Options{Brand: brand}); err == nil {
			out[p.ID] = p
		}
	}
	return out, order
}

// A step renames one hotel, changes another's status and replaces a third
// by a new one, each a hotel the edge maps, in place (every other slot
// keeps its record), the same for the same seed.
func TestChurnStep(t *testing.T) {
	s := New(Config{Seed: 5, Brands: 2, HotelsPerBrand: 40})
	before, slots := mapped(t, s, "aurora")
	steps := s.Churn()
	if len(steps) != 2 || steps[0].Brand != "aurora" || steps[1].Brand != "borealis" {
		t.Fatalf("steps %+v; want one per brand", steps)
	}
	st := steps[0]
	after, slots2 := mapped(t, s, "aurora")
	low := strings.ToLower
	renamed, retyped, removed, added := before[low(st.Renamed)], after[low(st.Retyped)], low(st.Removed), low(st.Added)
	if got := after[low(st.Renamed)].Name; got == renamed.Name || strings.TrimSuffix(got, renovated) != renamed.Name {
		t.Errorf("renamed %s: %q, was %q", st.Renamed, got, renamed.Name)
	}
	if retyped.Status == before[low(st.Retyped)].Status {
		t.Errorf("retyped %s: status still %s", st.Retyped, retyped.Status)
	}
	if _, ok := before[removed]; !ok {
		t.Errorf("removed %s was not a mapped hotel", removed)
	}
	if _, ok := after[removed]; ok {
		t.Errorf("removed %s is still served", removed)
	}
	if p, ok := after[added]; !ok || !strings.Contains(p.Name, "Annex") {
		t.Errorf("added %s: %+v, %v", added, p, ok)
	}
	if len(after) != len(before) || len(slots2) != len(slots) {
		t.Errorf("%d hotels mapped after, %d before; %d slots, %d", len(after), len(before), len(slots2), len(slots))
	}
	changed := 0
	for i := range slots {
		if slots[i] != slots2[i] {
			changed++
		}
	}
	if changed != 1 {
		t.Errorf("%d slots hold another hotel; want the replaced one only", changed)
	}
	again := New(Config{Seed: 5, Brands: 2, HotelsPerBrand: 40}).Churn()
	if !reflect.DeepEqual(again, steps) {
		t.Errorf("the same seed changed %+v, then %+v", steps, again)
	}
}

// With Config.Churn the steps come as requests arrive, none before.
func TestChurnAsRequestsArrive(t *testing.T) {
	s := New(Config{Seed: 5, HotelsPerBrand: 20, Churn: time.Millisecond})
	first := s.Records("aurora")
	srv := httptest.NewServer(s)
	defer srv.Close()
	testkit.Eventually(t, "a list request finds the data changed", func() bool {
		testkit.Get(t, srv.URL+"/internal/v2/brands/aurora/hotels?limit=1")
		return !slices.EqualFunc(s.Records("aurora"), first, func(a, b json.RawMessage) bool { return string(a) == string(b) })
	})
	quiet := New(Config{Seed: 5, HotelsPerBrand: 20})
	srv2 := httptest.NewServer(quiet)
	defer srv2.Close()
	before := quiet.Records("aurora")
	for range 5 {
		testkit.Get(t, srv2.URL+"/internal/v2/brands/aurora/hotels?limit=1")
	}
	if !slices.EqualFunc(quiet.Records("aurora"), before, func(a, b json.RawMessage) bool { return string(a) == string(b) }) {
		t.Error("a Sim without Churn changed its data")
	}
}

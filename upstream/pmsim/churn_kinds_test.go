package pmsim

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// served is every record of brand the Sim serves, by hotel_id as stored.
func served(t *testing.T, s *Sim, brand string) map[string]json.RawMessage {
	t.Helper()
	out := map[string]json.RawMessage{}
	for _, r := range s.Records(brand) {
		out[hotelID(t, r)] = r
	}
	return out
}

// changesOf returns the ids the steps changed, by kind, and every id they
// touched (a replacement's both).
func changesOf(steps []ChurnStep) (map[string][]string, map[string]bool) {
	byKind, touched := map[string][]string{}, map[string]bool{}
	for _, st := range steps {
		for _, c := range st.Changes {
			byKind[c.Kind] = append(byKind[c.Kind], c.ID)
			touched[c.ID] = true
			if c.Was != "" {
				touched[c.Was] = true
			}
		}
	}
	return byKind, touched
}

// With ChurnChanges 14 every step makes each kind of change twice, and
// each does what it says as the edge sees it (mapping.MapRaw): a rename, a
// status change, a replacement, a hotel that stops mapping and, a step
// later, maps again, a removal, a creation in a slot an earlier step
// emptied. Every record no change names keeps its bytes, and the index
// finds exactly the records served.
func TestChurnEveryKind(t *testing.T) {
	s, srv := serve(t, Config{Seed: 9, Brands: 1, HotelsPerBrand: 200, ChurnChanges: 14})
	first := s.Churn()
	mapped1, _ := mapped(t, s, "aurora")
	served1 := served(t, s, "aurora")
	second := s.Churn()
	mapped2, _ := mapped(t, s, "aurora")
	served2 := served(t, s, "aurora")
	if len(second) != 1 {
		t.Fatalf("steps %+v", second)
	}
	byKind, touched := changesOf(second)
	for _, k := range ChurnKinds {
		if len(byKind[k]) != 2 {
			t.Errorf("%s: %d changes (%v), want 2", k, len(byKind[k]), byKind[k])
		}
	}
	low := strings.ToLower
	get := func(id string) int {
		status, _, _ := call(t, srv, "/internal/v2/brands/aurora/hotels/"+id)
		return status
	}
	for _, id := range byKind[ChurnRename] {
		was, now := mapped1[low(id)].Name, mapped2[low(id)].Name
		if was == now || (strings.TrimSuffix(now, renovated) != was && strings.TrimSuffix(was, renovated) != now) {
			t.Errorf("rename %s: %q, was %q", id, now, was)
		}
	}
	for _, id := range byKind[ChurnStatus] {
		if mapped1[low(id)].Status == mapped2[low(id)].Status {
			t.Errorf("status %s: still %s", id, mapped2[low(id)].Status)
		}
	}
	unmapped1, _ := changesOf(first)
	for _, id := range byKind[ChurnUnmap] {
		if _, ok := mapped1[low(id)]; !ok {
			t.Errorf("unmap %s: was not mapped", id)
		}
		if _, ok := mapped2[low(id)]; ok || served2[id] == nil || get(id) != http.StatusOK {
			t.Errorf("unmap %s: mapped %v, served %v", id, ok, served2[id] != nil)
		}
	}
	for _, id := range byKind[ChurnRemap] {
		if !slices.Contains(unmapped1[ChurnUnmap], id) {
			t.Errorf("remap %s: not one the first step broke (%v)", id, unmapped1[ChurnUnmap])
		}
		if _, ok := mapped1[low(id)]; ok {
			t.Errorf("remap %s: was mapped", id)
		}
		if _, ok := mapped2[low(id)]; !ok {
			t.Errorf("remap %s: does not map", id)
		}
	}
	removed := byKind[ChurnRemove]
	for _, st := range second {
		for _, c := range st.Changes {
			if c.Kind == ChurnReplace {
				removed = append(removed, c.Was)
			}
		}
	}
	for _, id := range removed {
		if _, ok := mapped1[low(id)]; !ok {
			t.Errorf("removed %s: was not mapped", id)
		}
		if served2[id] != nil || get(id) != http.StatusNotFound {
			t.Errorf("removed %s: still served", id)
		}
	}
	for _, id := range append(byKind[ChurnCreate], byKind[ChurnReplace]...) {
		p, ok := mapped2[low(id)]
		if served1[id] != nil || !ok || !strings.Contains(p.Name, "Annex") || get(id) != http.StatusOK {
			t.Errorf("created %s: before %v, now %+v %v", id, served1[id] != nil, p, ok)
		}
	}
	for id, rec := range served1 {
		if !touched[id] && !bytes.Equal(served2[id], rec) {
			t.Errorf("%s changed, named by no change", id)
		}
	}
	// The first step's removals emptied slots the second step's creations
	// filled: as many slots as records plus the first step's removals.
	s.mu.RLock()
	d := s.data["aurora"]
	slots, empty := len(d.recs), len(d.free)
	for i, rec := range d.recs {
		if rec == nil {
			continue
		}
		if id := d.ids[i]; d.exact[id].first != i || d.fold[low(id)].first != i {
			t.Errorf("slot %d (%s): the index says %d, %d", i, id, d.exact[id].first, d.fold[low(id)].first)
		}
	}
	indexed := len(d.exact)
	s.mu.RUnlock()
	if slots != 202 || empty != 2 || len(served2) != 200 || indexed != 200 {
		t.Errorf("%d slots, %d empty, %d records served, %d indexed; want 202, 2, 200, 200", slots, empty, len(served2), indexed)
	}
}

// A walk while churn runs between its pages lists every record no change
// touched exactly once, no record twice, and pages that parse; with
// churn in another goroutine, every page still parses (run under -race).
func TestPagesConsistentWhileChurning(t *testing.T) {
	s, srv := serve(t, Config{Seed: 3, Brands: 1, HotelsPerBrand: 300, ChurnChanges: 21})
	s.Churn() // slots emptied, records broken: the next steps fill and mend them
	before := served(t, s, "aurora")
	var steps []ChurnStep
	seen := map[string]int{}
	cursor := ""
	for range 100 {
		status, _, body := call(t, srv, listPath("aurora", 7, cursor))
		var p page
		if status != 200 || json.Unmarshal(body, &p) != nil {
			t.Fatalf("page: %d %s", status, body)
		}
		for _, r := range p.Hotels {
			seen[hotelID(t, r)]++
		}
		steps = append(steps, s.Churn()...)
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	_, touched := changesOf(steps)
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s listed %d times", id, n)
		}
	}
	for id := range before {
		if !touched[id] && seen[id] != 1 {
			t.Errorf("%s, untouched, listed %d times", id, seen[id])
		}
	}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				s.Churn()
			}
		}
	})
	defer wg.Wait()
	defer close(stop)
	for range 50 {
		status, _, body := call(t, srv, listPath("aurora", 50, ""))
		var p page
		if status != 200 || json.Unmarshal(body, &p) != nil {
			t.Fatalf("page while churning: %d %s", status, body)
		}
	}
}

// The index keeps the first record of an id when churn's edits remove or
// add records sharing it (as SetRecords may give), exactly and
// case-insensitively.
func TestIndexFollowsEdits(t *testing.T) {
	const a = "aaaaaaaa-0000-4000-8000-000000000001"
	rec := func(id, name string) json.RawMessage {
		return json.RawMessage(`{"hotel_id":"` + id + `","display_name":"` + name + `"}`)
	}
	d := index([]json.RawMessage{rec("x", "x"), rec(a, "one"), rec(strings.ToUpper(a), "upper"), rec(a, "two")})
	first := func(id string) (int, int) { return d.exact[id].first, d.fold[strings.ToLower(id)].first }
	if e, f := first(a); e != 1 || f != 1 {
		t.Fatalf("first %d, %d; want 1, 1", e, f)
	}
	d.set(1, nil, "")
	if e, f := first(a); e != 3 || f != 2 {
		t.Fatalf("after removing slot 1: %d, %d; want 3, 2", e, f)
	}
	d.set(2, rec("y", "y"), "y")
	if e, f := first(a); e != 3 || f != 3 {
		t.Fatalf("after replacing slot 2: %d, %d; want 3, 3", e, f)
	}
	d.set(5, rec(a, "new"), a) // beyond the end: slot 4 stays empty
	d.set(3, nil, "")
	if e, f := first(a); e != 5 || f != 5 || len(d.recs) != 6 || d.recs[4] != nil {
		t.Fatalf("after adding slot 5 and emptying 3: %d, %d, %d slots", e, f, len(d.recs))
	}
	d.set(5, nil, "")
	if _, ok := d.exact[a]; ok {
		t.Fatal("an id no slot holds is still indexed")
	}
	if _, ok := d.fold[a]; ok {
		t.Fatal("an id no slot holds is still indexed, lower-cased")
	}
}

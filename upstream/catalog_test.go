package upstream

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
)

func TestSnapshotActiveJSON(t *testing.T) {
	var items []*Item
	for i, id := range []string{"c", "a", "b"} {
		items = append(items, &Item{ID: id, Active: id != "b", CreatedAt: time.Unix(int64(10-i), 0), JSON: []byte(`{"id":"` + id + `"}`)})
	}
	s := NewSnapshot(items, time.Now())
	for _, tc := range []struct {
		i, j int
		want string
	}{
		{0, 2, `{"id":"a"},{"id":"c"}`}, {1, 2, `{"id":"c"}`}, {0, 1, `{"id":"a"}`}, {0, 99, `{"id":"a"},{"id":"c"}`}, {2, 3, ``}, {1, 1, ``},
	} {
		if got := string(s.ActiveJSON(tc.i, tc.j)); got != tc.want {
			t.Errorf("ActiveJSON(%d, %d) = %s, want %s", tc.i, tc.j, got, tc.want)
		}
	}
	if it, ok := s.Get("b"); !ok || it.Active || s.Len() != 3 {
		t.Errorf("inactive item not indexed")
	}
}

// docs/contract.md section 25: a walk that finds a property unchanged keeps
// the previous walk's item (one copy in memory for both snapshots); a
// changed one, a new one and one whose listing changed are new items.
func TestSnapshotAfterSharesUnchangedItems(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	prop := func(id, name, status string) mapping.Property {
		return mapping.Property{ID: id, Name: name, Status: status, Timezone: "UTC", CreatedAt: at, UpdatedAt: at}
	}
	prev := SnapshotOf([]mapping.Property{prop("a", "A", "active"), prop("b", "B", "active"), prop("c", "C", "active")}, at)
	next := SnapshotAfter(prev, []mapping.Property{prop("a", "A", "active"), prop("b", "B2", "active"), prop("c", "C", "inactive"), prop("d", "D", "active")}, at.Add(time.Minute))
	get := func(s *Snapshot, id string) *Item {
		it, ok := s.Get(id)
		if !ok {
			t.Fatalf("%s missing", id)
		}
		return it
	}
	if get(prev, "a") != get(next, "a") {
		t.Errorf("unchanged a: a new item; want the previous walk's")
	}
	for _, id := range []string{"b", "c"} {
		if get(prev, id) == get(next, id) {
			t.Errorf("changed %s: the previous walk's item kept", id)
		}
	}
	if it := get(next, "b"); string(it.JSON) != string(prop("b", "B2", "active").AppendJSON(nil)) {
		t.Errorf("b's JSON %s : want the new name", it.JSON)
	}
	if len(next.Active) != 3 || get(next, "c").Active {
		t.Errorf("next lists %d, c active %v", len(next.Active), get(next, "c").Active)
	}
	h := next.Held()
	if len(h.Active) != 3 || h.Active[0] != next.Active[0] || h.Joined() || h.ActiveJSON(0, 3) != nil || !next.Joined() {
		t.Errorf("Held view: %d active, joined %v", len(h.Active), h.Joined())
	}
}

// A page of a held snapshot is one slice of the current snapshot's joined
// JSON when its properties are unchanged, wherever creations and removals
// before it moved them; nil when one of them changed.
func TestJoinedRunFindsShiftedPages(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	props := make([]mapping.Property, 40)
	for i := range props {
		props[i] = mapping.Property{ID: fmt.Sprintf("id-%03d", i), Name: fmt.Sprint("P", i), Status: "active", Timezone: "UTC",
			CreatedAt: at.Add(time.Duration(i) * time.Minute), UpdatedAt: at}
	}
	held := SnapshotOf(props, at)
	next := slices.Clone(props[3:]) // three removed before the page
	next[25].Name = "changed"       // id-028
	cur := SnapshotAfter(held, next, at.Add(time.Hour))
	page := held.Active[10:20]
	got := cur.JoinedRun(page, 10)
	var want []byte
	for i, it := range page {
		if i > 0 {
			want = append(want, ',')
		}
		want = append(want, it.JSON...)
	}
	if string(got) != string(want) {
		t.Errorf("unchanged page: %.80s; want %.80s", got, want)
	}
	if got := SnapshotAfter(held, props, at.Add(time.Hour)).JoinedRun(page, 10); string(got) != string(want) {
		t.Errorf("unchanged page in place: %.80s; want %.80s", got, want)
	}
	if got := cur.JoinedRun(held.Active[20:30], 20); got != nil {
		t.Errorf("a page with a changed property: %.80s; want nil (item by item)", got)
	}
	if got := held.Held().JoinedRun(page, 10); got != nil {
		t.Errorf("from a Held view: %.80s; want nil", got)
	}
}

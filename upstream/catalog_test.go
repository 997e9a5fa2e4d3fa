package upstream

import (
	"testing"
	"time"
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

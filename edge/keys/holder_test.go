package keys

import (
	"slices"
	"testing"
	"time"
)

// A key's endpoints follow it through rotations (docs/webhooks.md): Holder
// of the first record is its latest successor, of another record itself,
// and of a revoked one nothing; Predecessors names the records replaced.
func TestHolderFollowsRotations(t *testing.T) {
	_, first := minted(t, 1, ModeLive, nil)
	_, other := minted(t, 2, ModeLive, func(r *Record) { r.Partner = "Other" })
	path := keyFile(t, first, other)
	ed := editor(path, 3)
	_, second, err := ed.Rotate(first.ID, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	_, third, err := ed.Rotate(second.ID, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{first.ID: third.ID, second.ID: third.ID, third.ID: third.ID, other.ID: other.ID} {
		if k, ok := s.Holder(id); !ok || k.ID != want {
			t.Errorf("Holder(%s) = %v %v; want %s", id, k, ok, want)
		}
	}
	// Predecessors is the other way: the keys a key replaced, and theirs.
	if got := s.Predecessors(third.ID); !slices.Equal(got, []string{first.ID, second.ID}) {
		t.Errorf("Predecessors(third) = %v; want [%s %s]", got, first.ID, second.ID)
	}
	if got := s.Predecessors(first.ID); len(got) != 0 {
		t.Errorf("Predecessors(first) = %v; want none", got)
	}
	if err := ed.Revoke(other.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if k, ok := s.Holder(other.ID); ok {
		t.Errorf("Holder of a revoked key: %v", k.ID)
	}
}

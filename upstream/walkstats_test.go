package upstream

import (
	"slices"
	"testing"

	"github.com/partner-edge/partner-edge/mapping"
)

// Every mapping reason has a counter of its own in WalkStats, and the last
// one is left for a reason outside the list.
func TestWalkStatsHasASlotPerReason(t *testing.T) {
	if len(mapping.Reasons) >= rejectionSlots {
		t.Fatalf("%d reasons, %d slots: raise rejectionSlots", len(mapping.Reasons), rejectionSlots)
	}
	st := &WalkStats{}
	for _, r := range append(slices.Clone(mapping.Reasons), "new_reason") {
		st.reject("h1", r)
	}
	by := st.RejectedBy()
	if len(by) != len(mapping.Reasons)+1 || by["unknown"] != 1 || st.Rejected() != int64(len(mapping.Reasons)+1) {
		t.Fatalf("rejections by reason %v", by)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

// pinnedPage is one page of the list as a partner decodes it.
type pinnedPage struct {
	ids   []string
	total int
	next  string
}

// page reads the list page query (page, perPage, asOf) and fails the test
// on any answer but 200.
func (p partner) page(t *testing.T, query string) pinnedPage {
	t.Helper()
	code, body := p.get(t, "properties?"+query)
	var l struct {
		Data []struct{ ID string } `json:"data"`
		Meta struct {
			Pagination struct{ Total int }   `json:"pagination"`
			Events     struct{ Next string } `json:"events"`
		} `json:"meta"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &l) != nil {
		t.Fatalf("list %s: %d %s", query, code, body)
	}
	pp := pinnedPage{total: l.Meta.Pagination.Total, next: l.Meta.Events.Next}
	for _, d := range l.Data {
		pp.ids = append(pp.ids, d.ID)
	}
	return pp
}

// docs/contract.md section 25 through the built binary: a partner lists
// page 1, the PMS changes (a property of page 1 removed, one created, one
// made inactive, one renamed) and the edge walks it; the other pages,
// pinned with asOf, keep page 1's total and membership; the copy, followed
// by the feed from the same cursor and kept to active properties, equals
// the list. With EDGE_LIST_HOLD=2s the pinned snapshot then expires:
// 410 LIST_SNAPSHOT_EXPIRED.
func TestListingPinnedThroughTheBinary(t *testing.T) {
	t.Parallel()
	pms := newFeedPMS(t)
	k := newFeedKeys(t, []string{"*"})
	live := partner{startFeedEdge(t, pms, k, "EDGE_LIST_HOLD=2s"), k.live}
	first := live.page(t, "perPage=5")
	all := live.page(t, "perPage=100&asOf="+first.next)
	if all.total != first.total || !slices.Equal(all.ids[:5], first.ids) || len(all.ids) < 15 {
		t.Fatalf("page 1 %v of %d; the whole list pinned to it %d of %d", first.ids, first.total, len(all.ids), all.total)
	}

	gone, closed, renamed, added := first.ids[1], all.ids[8], all.ids[12], "0c8ea9b2-6a5e-4d0a-9c7b-3f1e2d4a5b6c"
	template := record(t, pms.live, all.ids[0])
	template["hotel_id"], template["display_name"] = added, "Aurora Added"
	edit(t, pms.live, func(rec map[string]any) map[string]any {
		switch hotel(rec) {
		case gone:
			return nil
		case closed:
			rec["lifecycle"] = "TEMP_CLOSED"
		case renamed:
			rec["display_name"] = "Aurora Renamed"
		}
		return rec
	}, template)
	testkit.Eventually(t, "the edge walked the changed PMS", func() bool {
		return !slices.Contains(live.page(t, "perPage=100").ids, gone)
	})

	copy := map[string]bool{}
	var listed []string
	for page := 1; ; page++ {
		q := fmt.Sprintf("perPage=5&page=%d", page)
		if page > 1 {
			q += "&asOf=" + first.next
		}
		p := first
		if page > 1 {
			p = live.page(t, q)
		}
		if p.total != first.total || p.next != first.next {
			t.Errorf("page %d: total %d, next %s; want page 1's %d, %s", page, p.total, p.next, first.total, first.next)
		}
		if len(p.ids) == 0 {
			break
		}
		listed = append(listed, p.ids...)
		for _, id := range p.ids {
			copy[id] = true
		}
	}
	if !slices.Equal(listed, all.ids) {
		t.Errorf("the pages pinned with asOf: %v\nwant page 1's snapshot: %v", listed, all.ids)
	}
	for _, e := range live.follow(t, first.next) {
		if e.Type != "property.removed" && e.Data.Status == "active" {
			copy[e.Data.ID] = true
		} else {
			delete(copy, e.Data.ID)
		}
	}
	now := live.page(t, "perPage=100")
	if len(copy) != len(now.ids) {
		t.Errorf("the copy holds %d properties, the list %d", len(copy), len(now.ids))
	}
	for _, id := range now.ids {
		if !copy[id] {
			t.Errorf("the copy lacks %s", id)
		}
	}
	if copy[gone] || copy[closed] || !copy[added] {
		t.Errorf("the copy: removed %v, inactive %v, created %v", copy[gone], copy[closed], copy[added])
	}

	testkit.Eventually(t, "past EDGE_LIST_HOLD the pinned snapshot is 410", func() bool {
		status, code, _ := live.problemCode(t, "properties?page=2&perPage=5&asOf="+first.next)
		return status == http.StatusGone && code == "LIST_SNAPSHOT_EXPIRED"
	})
	if status, code, fields := live.problemCode(t, "properties?asOf=evt_000"); status != 422 || code != "VALIDATION_FAILED" ||
		!slices.Equal(fields, []string{"asOf INVALID_FORMAT"}) {
		t.Errorf("asOf not a cursor: %d %s %v", status, code, fields)
	}
}

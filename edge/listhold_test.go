package edge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
)

// swapCatalog serves whichever snapshot it holds now.
type swapCatalog struct {
	cur atomic.Pointer[upstream.Snapshot]
}

func (c *swapCatalog) Snapshot(context.Context) (*upstream.Snapshot, error) { return c.cur.Load(), nil }

func (c *swapCatalog) Property(_ context.Context, id string) (*upstream.Item, error) {
	if it, ok := c.cur.Load().Get(id); ok {
		return it, nil
	}
	return nil, &upstream.Error{Kind: upstream.NotFound}
}

// snapshotOf n active properties named after walk, loaded at walk.
func snapshotOf(n int, walk time.Time) *upstream.Snapshot {
	props := make([]mapping.Property, n)
	for i := range props {
		props[i] = mapping.Property{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Name: fmt.Sprintf("Hotel %d of %d", i, walk.Unix()),
			Status: mapping.StatusActive, Timezone: "UTC", CreatedAt: walk.Add(-time.Hour), UpdatedAt: walk}
	}
	return upstream.SnapshotOf(props, walk)
}

// A compressed list page is cached once per snapshot and page, and the
// cache never keeps a replaced snapshot alive: after four walks a brand
// was held four times over (its index, joined JSON and items), the cause
// of a heap four times the snapshot's size.
func TestCompressedPagesPinNoSnapshot(t *testing.T) {
	store, token := liveKeyStore(t)
	cat := &swapCatalog{}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// The edge on the walks' day, moving: request deadlines as before.
	h := edge.NewServer(edge.Config{Brand: testBrand, DocsURL: testDocsURL, Now: testkit.From(at)}, store, cat, nil)
	var replaced []weak.Pointer[upstream.Snapshot]
	for walk := range 5 {
		s := snapshotOf(200, at.Add(time.Duration(walk)*time.Minute))
		cat.cur.Store(s)
		if walk < 4 {
			replaced = append(replaced, weak.Make(s))
		}
		r := httptest.NewRequest(http.MethodGet, "/v1/properties?perPage=100", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("User-Agent", "hold-test/1.0")
		r.Header.Set("Accept-Encoding", "gzip")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Header().Get("Content-Encoding") != "gzip" {
			t.Fatalf("walk %d: %d %q", walk, w.Code, w.Header().Get("Content-Encoding"))
		}
	}
	runtime.GC()
	runtime.GC()
	for i, p := range replaced {
		if p.Value() != nil {
			t.Errorf("the snapshot of walk %d is still alive after it was replaced", i)
		}
	}
	runtime.KeepAlive(h) // its page cache
}

// listPage is one decoded page of GET /v1/properties.
type listPage struct {
	ids   []string
	total int
	next  string
}

// list reads one page as key (query: page, perPage, asOf) and decodes it.
func (h *harness) list(key, query string) listPage {
	h.t.Helper()
	res := h.do(request{path: "/v1/properties?" + query, key: key})
	var l struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		Meta struct {
			Pagination struct{ Total int }   `json:"pagination"`
			Events     struct{ Next string } `json:"events"`
		} `json:"meta"`
	}
	if res.status != http.StatusOK || json.Unmarshal(res.body, &l) != nil {
		h.t.Fatalf("list %s as %s: %d %s", query, key, res.status, short(res.body))
	}
	p := listPage{total: l.Meta.Pagination.Total, next: l.Meta.Events.Next}
	for _, d := range l.Data {
		p.ids = append(p.ids, d.ID)
	}
	return p
}

// follow reads the feed as key after after until it has no more, applying
// each event to copy as docs/partner-api.md says (created and updated
// properties kept while their status is active, removed ones dropped);
// it returns the feed's last cursor.
func (h *harness) follow(key, after string, copy map[string]bool) string {
	h.t.Helper()
	for {
		res := h.do(request{path: "/v1/events?limit=7&after=" + after, key: key})
		var a eventsAnswer
		if res.status != http.StatusOK || json.Unmarshal(res.body, &a) != nil {
			h.t.Fatalf("events after %s: %d %s", after, res.status, short(res.body))
		}
		for _, e := range a.Data {
			switch {
			case e.Type != "property.removed" && e.Data.Status == "active":
				copy[e.Data.ID] = true
			default:
				delete(copy, e.Data.ID)
			}
		}
		after = a.Meta.Events.Next
		if !a.Meta.Events.HasMore {
			return after
		}
	}
}

// docs/contract.md section 25 through the edge: a partner lists page 1,
// the PMS changes (a property removed from page 1, one created, one made
// inactive, one renamed), and the other pages, read with asOf, keep page
// 1's total, order and membership, while the list without asOf has moved
// on; the copy made so, followed by the feed from the same cursor and
// kept to active properties, equals the list.
func TestListingWithAsOfReadsOneSnapshot(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	before := activeIDs(t, h.live, testBrand)
	first := h.list("live", "perPage=5")
	if first.total != len(before) || !slices.Equal(first.ids, before[:5]) {
		t.Fatalf("page 1: total %d %v; want %d %v", first.total, first.ids, len(before), before[:5])
	}
	gone, inactive, renamed := before[1], before[12], before[20]
	var template map[string]any
	editRecords(t, h.live, func(rec map[string]any) map[string]any {
		if strings.ToLower(rec["hotel_id"].(string)) == before[0] {
			template = maps.Clone(rec)
		}
		return rec
	})
	template["hotel_id"], template["display_name"] = "0c8ea9b2-6a5e-4d0a-9c7b-3f1e2d4a5b6c", "New Hotel"
	editRecords(t, h.live, func(rec map[string]any) map[string]any {
		switch strings.ToLower(rec["hotel_id"].(string)) {
		case gone:
			return nil
		case inactive:
			rec["lifecycle"] = "CLOSED"
		case renamed:
			rec["display_name"] = "Renamed Hotel"
		}
		return rec
	}, template)
	after := activeIDs(t, h.live, testBrand)
	if now := h.list("live", "perPage=5&page=2"); now.total == first.total && slices.Equal(now.ids, before[5:10]) {
		t.Fatalf("without asOf page 2 did not move: %v", now.ids)
	}

	copy := map[string]bool{}
	for _, id := range first.ids {
		copy[id] = true
	}
	got := slices.Clone(first.ids)
	for page := 2; ; page++ {
		p := h.list("live", fmt.Sprintf("perPage=5&page=%d&asOf=%s", page, first.next))
		if p.total != first.total || p.next != first.next {
			t.Errorf("page %d with asOf: total %d, next %s; want page 1's %d, %s", page, p.total, p.next, first.total, first.next)
		}
		if len(p.ids) == 0 {
			break
		}
		got = append(got, p.ids...)
		for _, id := range p.ids {
			copy[id] = true
		}
	}
	if !slices.Equal(got, before) {
		t.Errorf("the listing with asOf: %v\nwant the snapshot of page 1: %v", got, before)
	}

	// The feed's scope: every property the key may get, active or not;
	// the one made inactive is an update carrying status inactive.
	res := h.do(request{path: "/v1/events?limit=100&after=" + first.next, key: "live"})
	var a eventsAnswer
	if res.status != http.StatusOK || json.Unmarshal(res.body, &a) != nil {
		t.Fatalf("events: %d %s", res.status, short(res.body))
	}
	seen := false
	for _, e := range a.Data {
		if e.Data.ID == inactive {
			seen = true
			if e.Type != "property.updated" || e.Data.Status != "inactive" {
				t.Errorf("the property made inactive: %s with status %s; want property.updated, inactive", e.Type, e.Data.Status)
			}
		}
	}
	if !seen || a.Meta.Events.HasMore {
		t.Errorf("no event for the property made inactive in %d events", len(a.Data))
	}
	h.follow("live", first.next, copy)
	if want := h.list("live", "perPage=100"); len(copy) != len(want.ids) || len(want.ids) != len(after) {
		t.Errorf("the copy after the feed holds %d properties; the list %d (%d in the PMS)", len(copy), len(want.ids), len(after))
	} else {
		for _, id := range want.ids {
			if !copy[id] {
				t.Errorf("the copy lacks %s", id)
			}
		}
	}
}

// testClock is a settable clock, safe for concurrent use.
type testClock struct{ ns atomic.Int64 }

func (c *testClock) Now() time.Time       { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) Set(t time.Time)      { c.ns.Store(t.UnixNano()) }
func (c *testClock) Add(d time.Duration)  { c.ns.Add(int64(d)) }
func newTestClock(t time.Time) *testClock { c := &testClock{}; c.Set(t); return c }

// walkedHarness is the harness in front of a catalog whose walks the test
// makes (swapCatalog: each stored snapshot is one walk), on clk.
func walkedHarness(t *testing.T, clk *testClock) (*harness, *swapCatalog) {
	t.Helper()
	cat := &swapCatalog{}
	h := newHarness(t, harnessOptions{now: clk.Now, catalogs: func(_, sandbox upstream.Catalog) (upstream.Catalog, upstream.Catalog) {
		return cat, sandbox
	}})
	return h, cat
}

// createdAt is when walkTo's properties were created.
var createdAt = time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)

// walkTo stores the next walk of n properties at version v, sharing
// unchanged items with the previous walk as the PMS walk does.
func walkTo(cat *swapCatalog, n, v int, at time.Time) *upstream.Snapshot {
	props := make([]mapping.Property, n)
	for i := range props {
		props[i] = mapping.Property{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Name: fmt.Sprintf("Hotel %d", i),
			Status: mapping.StatusActive, Timezone: "UTC", CreatedAt: createdAt, UpdatedAt: createdAt}
		if i < v { // version v renames the first v properties
			props[i].Name = fmt.Sprintf("Hotel %d v%d", i, v)
		}
	}
	s := upstream.SnapshotAfter(cat.cur.Load(), props, at)
	cat.cur.Store(s)
	return s
}

// docs/contract.md section 25: a replaced snapshot is held for
// EDGE_LIST_HOLD (15 minutes by default), sharing its unchanged items
// with the current one; then asOf is 410 LIST_SNAPSHOT_EXPIRED.
func TestListSnapshotHeldThenExpired(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := newTestClock(at)
	h, cat := walkedHarness(t, clk)
	walkTo(cat, 30, 0, at)
	first := h.list("live", "perPage=10")
	clk.Add(time.Minute)
	cur := walkTo(cat, 30, 3, clk.Now()) // three properties renamed
	if p := h.list("live", "perPage=10&page=3&asOf="+first.next); p.total != 30 || len(p.ids) != 10 {
		t.Fatalf("page 3 of the held snapshot: %+v", p)
	}
	// Page 1 holds the renamed properties as they were (item by item from
	// the held snapshot); page 3, unchanged, is a run of the current one.
	for page, want := range map[int]string{1: `"name":"Hotel 0"`, 3: `"name":"Hotel 25"`} {
		for _, ae := range []string{"", "gzip"} {
			req := request{path: fmt.Sprintf("/v1/properties?perPage=10&page=%d&asOf=%s", page, first.next), key: "live"}
			if ae != "" {
				req.headers = map[string][]string{"Accept-Encoding": {ae}}
			}
			if res := h.do(req); !strings.Contains(string(res.body), want) || strings.Contains(string(res.body), " v3") {
				t.Errorf("held page %d (%q): %s; want %s as it was", page, ae, short(res.body), want)
			}
		}
	}
	held, err := h.feeds.Live.AsOf(context.Background(), first.next, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range held.Active {
		c, _ := cur.Get(it.ID)
		if shared := c == it; shared != (i >= 3) {
			t.Errorf("property %d: held item shared with the current snapshot %v; want shared unless renamed", i, shared)
		}
	}
	if n, bytes := h.feeds.Live.HeldStats(); n != 1 || bytes >= cur.Bytes()/2 {
		t.Errorf("held %d snapshots costing %d bytes; want one, its references and three old versions (the current costs %d)", n, bytes, cur.Bytes())
	}

	clk.Add(15*time.Minute - time.Millisecond)
	h.list("live", "perPage=10&page=2&asOf="+first.next)
	clk.Add(time.Millisecond)
	req := request{path: "/v1/properties?perPage=10&page=2&asOf=" + first.next, key: "live"}
	pb := wantProblem(t, req, h.do(req), problem.ListSnapshotExpired)
	if !strings.Contains(pb.Detail, "page 1 without asOf") {
		t.Errorf("detail %q does not say how to recover", pb.Detail)
	}
	// A get reads the current snapshot, asOf or not.
	if res := h.do(request{path: "/v1/properties/" + cur.Active[0].ID, key: "live"}); !strings.Contains(string(res.body), "Hotel 0 v3") {
		t.Errorf("get: %s; want the current property", short(res.body))
	}
}

// docs/contract.md section 25: asOf and after the edge never issued (not
// a list cursor, another mode's, past the last walk, a time no walk had)
// are 422 on the parameter; asOf twice is 400.
func TestCursorsNeverIssuedAreRefused(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := newTestClock(at)
	h, cat := walkedHarness(t, clk)
	// Another edge's cursors: of a walk between this edge's two walks
	// (no walk of this one), and of a walk after its last.
	clk2 := newTestClock(at)
	other, otherCat := walkedHarness(t, clk2)

	walkTo(cat, 12, 0, at)
	first := h.list("live", "perPage=5")
	walkTo(otherCat, 12, 0, at.Add(30*time.Second))
	between := other.list("live", "perPage=5").next
	clk.Add(time.Minute)
	walkTo(cat, 12, 1, clk.Now())
	second := h.list("live", "perPage=5")
	walkTo(otherCat, 12, 0, at.Add(2*time.Minute))
	future := other.list("live", "perPage=5").next
	evs := h.follow("live", first.next, map[string]bool{}) // the id of the one event
	if evs == first.next {
		t.Fatal("no event of the second walk")
	}

	for _, tc := range []struct {
		name, query string
		code        problem.Code
		field       string
	}{
		{"asOf past the last walk", "asOf=" + future, problem.ValidationFailed, "asOf"},
		{"asOf of no walk", "asOf=" + between, problem.ValidationFailed, "asOf"},
		{"asOf another mode's", "asOf=" + h.list("test", "perPage=1").next, problem.ValidationFailed, "asOf"},
		{"asOf an event id", "asOf=" + evs, problem.ValidationFailed, "asOf"},
		{"asOf not a cursor", "asOf=evt_bogus", problem.ValidationFailed, "asOf"},
		{"asOf twice", "asOf=" + first.next + "&asOf=" + first.next, problem.InvalidQueryParameter, "asOf"},
	} {
		req := request{path: "/v1/properties?" + tc.query, key: "live"}
		pb := wantProblem(t, req, h.do(req), tc.code)
		if len(pb.Errors) != 1 || pb.Errors[0].Field != tc.field || pb.Errors[0].Code != problem.FieldInvalidFormat {
			t.Errorf("%s: errors %+v; want one on %s, INVALID_FORMAT", tc.name, pb.Errors, tc.field)
		}
	}
	for name, after := range map[string]string{"past the last walk": future, "of no walk": between} {
		req := request{path: "/v1/events?after=" + after, key: "live"}
		pb := wantProblem(t, req, h.do(req), problem.ValidationFailed)
		if len(pb.Errors) != 1 || pb.Errors[0].Field != "after" {
			t.Errorf("after %s: errors %+v; want one on after", name, pb.Errors)
		}
	}
	// What the edge issued is served.
	for _, q := range []string{"asOf=" + first.next, "asOf=" + second.next} {
		h.list("live", q)
	}
	h.follow("live", second.next, map[string]bool{})
}

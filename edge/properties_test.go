package edge_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// expected is what the edge should list for a brand, worked out from the
// simulator's records: the mappable active ones in createdAt, id order.
type expected struct {
	ids      []string
	inactive []string // mappable, not active
	rejected []string // raw hotel_id of unmappable records
}

func expectedList(t testing.TB, sim *pmsim.Sim, brand string) expected {
	t.Helper()
	type row struct {
		id      string
		created time.Time
	}
	var rows []row
	var e expected
	for _, raw := range sim.Records(brand) {
		p, err := mapping.MapRaw(raw, mapping.Options{Brand: brand})
		if err != nil {
			var rec struct {
				ID string `json:"hotel_id"`
			}
			_ = json.Unmarshal(raw, &rec)
			e.rejected = append(e.rejected, rec.ID)
			continue
		}
		if !p.Active() {
			e.inactive = append(e.inactive, p.ID)
			continue
		}
		rows = append(rows, row{p.ID, p.CreatedAt})
	}
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(a.created.Compare(b.created), cmp.Compare(a.id, b.id))
	})
	for _, r := range rows {
		e.ids = append(e.ids, r.id)
	}
	return e
}

// Paging (docs/contract.md section 5), with the simulator paging in pieces of 3.
func TestPagination(t *testing.T) {
	h := newHarness(t, harnessOptions{pageSize: 3})
	want := expectedList(t, h.live, testBrand)

	req := request{path: "/v1/properties", key: "live"}
	env := wantOK(t, req, h.do(req))
	pg := env.Meta.Pagination
	if pg == nil || pg.Page != 1 || pg.PerPage != 50 || pg.Total != len(want.ids) {
		t.Fatalf("default pagination = %+v, want page 1, perPage 50, total %d", pg, len(want.ids))
	}
	if got := dataIDs(t, env); !equal(got, want.ids[:min(50, len(want.ids))]) {
		t.Errorf("default page = %v\nwant %v", got, want.ids)
	}

	var walked []string
	for page := 1; ; page++ {
		req := request{path: "/v1/properties?perPage=7&page=" + itoa(page), key: "live"}
		env := wantOK(t, req, h.do(req))
		ids := dataIDs(t, env)
		if env.Meta.Pagination.Total != len(want.ids) || env.Meta.Pagination.Page != page || env.Meta.Pagination.PerPage != 7 {
			t.Fatalf("page %d pagination %+v", page, env.Meta.Pagination)
		}
		if len(ids) == 0 {
			break
		}
		walked = append(walked, ids...)
	}
	if !equal(walked, want.ids) {
		t.Errorf("walking pages of 7 gave %v\nwant %v", walked, want.ids)
	}

	req = request{path: "/v1/properties?page=2147483647&perPage=100", key: "live"}
	env = wantOK(t, req, h.do(req))
	if string(env.Data) != "[]" || env.Meta.Pagination.Total != len(want.ids) {
		t.Errorf("page past the end: data %s total %d", env.Data, env.Meta.Pagination.Total)
	}
	if h.live.Stats().Lists < int64(len(h.live.Records(testBrand))/3) {
		t.Errorf("the simulator was not made to page (%d list requests)", h.live.Stats().Lists)
	}
}

var propertyKeys = []string{"object", "id", "name", "code", "status", "timezone", "createdAt", "updatedAt"}

// docs/contract.md section 6 and docs/pms-api.md sections 5 and 6, as
// partners see them.
func TestPropertyBodies(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	want := expectedList(t, h.live, testBrand)
	if len(want.ids) < 8 || len(want.inactive) == 0 || len(want.rejected) == 0 {
		t.Fatalf("simulator data too tame: %d active, %d inactive, %d rejected", len(want.ids), len(want.inactive), len(want.rejected))
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

	req := request{path: "/v1/properties?perPage=100", key: "live"}
	res := h.do(req)
	env := wantOK(t, req, res)
	var list []json.RawMessage
	if err := json.Unmarshal(env.Data, &list); err != nil {
		t.Fatal(err)
	}
	check := func(raw json.RawMessage) map[string]any {
		dec := json.NewDecoder(bytes.NewReader(raw))
		var order []string
		tok, _ := dec.Token() // {
		_ = tok
		for dec.More() {
			k, _ := dec.Token()
			order = append(order, k.(string))
			var skip any
			_ = dec.Decode(&skip)
		}
		if !equal(order, propertyKeys) {
			t.Errorf("property fields %v, want %v", order, propertyKeys)
		}
		var p map[string]any
		_ = json.Unmarshal(raw, &p)
		if p["object"] != "property" || !uuid.MatchString(p["id"].(string)) || p["code"] != nil {
			t.Errorf("property %s", raw)
		}
		name := p["name"].(string)
		if name == "" || strings.TrimSpace(name) != name {
			t.Errorf("name %q not trimmed", name)
		}
		for _, f := range []string{"createdAt", "updatedAt"} {
			if !timestampPattern.MatchString(p[f].(string)) {
				t.Errorf("%s = %q", f, p[f])
			}
		}
		if _, err := time.LoadLocation(p["timezone"].(string)); err != nil {
			t.Errorf("timezone %q", p["timezone"])
		}
		return p
	}
	for _, raw := range list {
		if p := check(raw); p["status"] != "active" {
			t.Errorf("listed status %v", p["status"])
		}
	}
	if len(list) != len(want.ids) {
		t.Errorf("listed %d, want %d", len(list), len(want.ids))
	}

	for _, id := range want.inactive {
		req := request{path: "/v1/properties/" + id, key: "live"}
		env := wantOK(t, req, h.do(req))
		if p := check(env.Data); p["status"] != "inactive" || p["id"] != id {
			t.Errorf("inactive property answered %s", env.Data)
		}
	}
	for _, id := range want.rejected {
		if _, ok := mapping.ParseID(id); !ok {
			continue
		}
		req := request{path: "/v1/properties/" + id, key: "live"}
		wantProblem(t, req, h.do(req), problem.PropertyNotFound)
	}
	other := expectedList(t, h.live, "borealis").ids[0]
	req = request{path: "/v1/properties/" + other, key: "live"}
	wantProblem(t, req, h.do(req), problem.PropertyNotFound)
	req = request{path: "/v1/properties/00000000-0000-4000-8000-000000000000", key: "live"}
	wantProblem(t, req, h.do(req), problem.PropertyNotFound)

	// No internal field, and no internal field name, reaches a partner.
	body := string(res.body)
	leaks := append(pmsim.InternalFieldNames(), pmsim.LeakMarker, "hotel_id", "brand_code", "display_name",
		"short_code", "legacy_property_code", "lifecycle", "time_zone", "created_at", "last_modified_ms")
	for _, internal := range leaks {
		if strings.Contains(body, internal) {
			t.Errorf("response carries internal %q", internal)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

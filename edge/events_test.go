package edge_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// eventsAnswer is a decoded GET /v1/events answer.
type eventsAnswer struct {
	Data []struct {
		Object     string `json:"object"`
		ID         string `json:"id"`
		Type       string `json:"type"`
		OccurredAt string `json:"occurredAt"`
		Data       struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"data"`
	} `json:"data"`
	Meta struct {
		Events struct {
			Next    string `json:"next"`
			HasMore bool   `json:"hasMore"`
		} `json:"events"`
	} `json:"meta"`
}

// listCursor lists as key and returns the list's meta.events.next.
func (h *harness) listCursor(key string) string {
	h.t.Helper()
	res := h.do(request{path: "/v1/properties?perPage=1", key: key})
	var l struct {
		Meta struct {
			Events struct{ Next string } `json:"events"`
		} `json:"meta"`
	}
	if res.status != http.StatusOK || json.Unmarshal(res.body, &l) != nil || !strings.HasPrefix(l.Meta.Events.Next, "evt_") {
		h.t.Fatalf("list as %s: %d %s", key, res.status, short(res.body))
	}
	return l.Meta.Events.Next
}

// walk makes the harness's catalog of key's mode walk the simulator, as
// the edge's walks on the clock do: here each list walks, and reading the
// feed never does (docs/contract.md section 24).
func (h *harness) walk(key string) {
	h.t.Helper()
	h.listCursor(key)
}

// events reads the feed as key after after, every page, until there is no
// more; it returns the events as "type id-of-property name".
func (h *harness) events(key, after string) []string {
	h.t.Helper()
	var out []string
	for {
		res := h.do(request{path: "/v1/events?limit=2&after=" + after, key: key})
		var a eventsAnswer
		if res.status != http.StatusOK || json.Unmarshal(res.body, &a) != nil {
			h.t.Fatalf("events as %s after %s: %d %s", key, after, res.status, short(res.body))
		}
		for _, e := range a.Data {
			if e.Object != "event" || !strings.HasPrefix(e.ID, "evt_") || !timestampPattern.MatchString(e.OccurredAt) {
				h.t.Errorf("event %+v: want object event, an evt_ id and occurredAt in milliseconds", e)
			}
			out = append(out, e.Type+" "+e.Data.ID+" "+e.Data.Name)
		}
		if a.Meta.Events.Next == "" || (len(a.Data) == 0 && a.Meta.Events.Next != after) && !a.Meta.Events.HasMore {
			h.t.Fatalf("an empty page's next %q; want the given after %q", a.Meta.Events.Next, after)
		}
		after = a.Meta.Events.Next
		if !a.Meta.Events.HasMore {
			return out
		}
	}
}

// editRecords changes the simulator's records of the brand: edit gets each
// record decoded and returns it (nil removes it); add appends records.
func editRecords(t *testing.T, sim *pmsim.Sim, edit func(rec map[string]any) map[string]any, add ...map[string]any) {
	t.Helper()
	var out []json.RawMessage
	for _, raw := range sim.Records(testBrand) {
		var rec map[string]any
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		if rec = edit(rec); rec != nil {
			b, _ := json.Marshal(rec)
			out = append(out, b)
		}
	}
	for _, rec := range add {
		b, _ := json.Marshal(rec)
		out = append(out, b)
	}
	sim.SetRecords(testBrand, out)
}

// docs/contract.md section 23 through the edge: list, take the cursor,
// change the PMS; the feed answers updated (the new Property), removed
// (the last one served) and created, in id order, after the cursor; a
// record that stops mapping is removed and, mapping again, created.
func TestEventsFollowThePMS(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ids := activeIDs(t, h.live, testBrand)
	cursor := h.listCursor("live")
	if got := h.events("live", cursor); len(got) != 0 {
		t.Fatalf("events after the first list: %v; the first walk is the baseline", got)
	}
	renamed, gone, added := ids[5], ids[6], "0c8ea9b2-6a5e-4d0a-9c7b-3f1e2d4a5b6c"
	// One edit of the PMS, so that one walk sees the three changes.
	var template map[string]any
	editRecords(t, h.live, func(rec map[string]any) map[string]any {
		if strings.ToLower(rec["hotel_id"].(string)) == ids[7] {
			template = maps.Clone(rec)
		}
		return rec
	})
	template["hotel_id"], template["display_name"] = added, "New Hotel"
	editRecords(t, h.live, func(rec map[string]any) map[string]any {
		switch strings.ToLower(rec["hotel_id"].(string)) {
		case renamed:
			rec["display_name"] = "Renamed Hotel"
		case gone:
			return nil
		}
		return rec
	}, template)

	want := []string{"property.updated " + renamed + " Renamed Hotel", "property.removed " + gone, "property.created " + added + " New Hotel"}
	var got []string
	testkit.Eventually(t, "the feed answers the changes", func() bool {
		h.walk("live")
		got = h.events("live", cursor)
		return len(got) == 3
	})
	slices.SortFunc(want, func(a, b string) int { return strings.Compare(strings.Fields(a)[1], strings.Fields(b)[1]) })
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("event %d: %q; want %q (in id order)", i, got[i], want[i])
		}
	}
	if !strings.Contains(got[slices.IndexFunc(got, func(s string) bool { return strings.HasPrefix(s, "property.removed") })], " Aurora ") {
		t.Errorf("the removed event does not carry the last Property served: %v", got)
	}

	// A record that stops mapping (a time zone no one knows) is removed,
	// and created again when it maps again.
	cursor = h.listCursor("live")
	broken := ids[8]
	var zone any
	editRecords(t, h.live, func(rec map[string]any) map[string]any {
		if strings.ToLower(rec["hotel_id"].(string)) == broken {
			zone, rec["time_zone"] = rec["time_zone"], "Mars/Olympus_Mons"
		}
		return rec
	})
	testkit.Eventually(t, "the broken record is removed", func() bool {
		h.walk("live")
		got = h.events("live", cursor)
		return len(got) == 1 && strings.HasPrefix(got[0], "property.removed "+broken)
	})
	editRecords(t, h.live, func(rec map[string]any) map[string]any {
		if strings.ToLower(rec["hotel_id"].(string)) == broken {
			rec["time_zone"] = zone
		}
		return rec
	})
	testkit.Eventually(t, "the mended record is created again", func() bool {
		h.walk("live")
		got = h.events("live", cursor)
		return len(got) == 2 && strings.HasPrefix(got[1], "property.created "+broken)
	})
}

// A key granted three properties sees their events only; a test key sees
// the sandbox's, and a live key not the sandbox's.
func TestEventsFollowTheKey(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ids := activeIDs(t, h.live, testBrand) // the granted key holds the first three
	live, granted, test := h.listCursor("live"), h.listCursor("granted"), h.listCursor("test")
	editRecords(t, h.live, func(rec map[string]any) map[string]any {
		rec["display_name"] = rec["display_name"].(string) + " Renovated"
		return rec
	})
	testkit.Eventually(t, "every live property updated", func() bool {
		h.walk("live")
		return len(h.events("live", live)) >= len(ids)
	})
	got := h.events("granted", granted)
	if len(got) != 3 {
		t.Fatalf("granted key: %v; want its three properties", got)
	}
	for _, e := range got {
		if id := strings.Fields(e)[1]; !slices.Contains(ids[:3], id) {
			t.Errorf("granted key saw %s, not granted", id)
		}
	}
	if got := h.events("test", test); len(got) != 0 {
		t.Errorf("test key saw the live PMS's changes: %v", got)
	}
	gone := activeIDs(t, h.sandbox, testBrand)[0]
	editRecords(t, h.sandbox, func(rec map[string]any) map[string]any {
		if strings.ToLower(rec["hotel_id"].(string)) == gone {
			return nil
		}
		return rec
	})
	testkit.Eventually(t, "the test key sees the sandbox's change", func() bool {
		h.walk("test")
		got := h.events("test", test)
		return len(got) == 1 && strings.HasPrefix(got[0], "property.removed "+gone)
	})
	for _, e := range h.events("live", live) {
		if strings.Contains(e, gone) {
			t.Errorf("a live key saw the sandbox's change: %s", e)
		}
	}
}

// docs/contract.md section 23: the query of GET /v1/events, in the order of
// section 2; limit and after validated like perPage; an after of another
// feed, mode or a made-up one is 422, one older than the feed 410.
func TestEventsQuery(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	cursor := h.listCursor("live")
	for _, tc := range []struct {
		query  string
		code   problem.Code
		fields []string
	}{
		{"limit=0", problem.ValidationFailed, []string{"limit OUT_OF_RANGE"}},
		{"limit=101", problem.ValidationFailed, []string{"limit OUT_OF_RANGE"}},
		{"limit=abc", problem.InvalidQueryParameter, []string{"limit INVALID_FORMAT"}},
		{"after=evt_bogus", problem.ValidationFailed, []string{"after INVALID_FORMAT"}},
		{"after=", problem.ValidationFailed, []string{"after INVALID_FORMAT"}},
		{"after=" + h.listCursor("test"), problem.ValidationFailed, []string{"after INVALID_FORMAT"}},
		{"after=evt_bogus&limit=500", problem.ValidationFailed, []string{"after INVALID_FORMAT", "limit OUT_OF_RANGE"}},
		{"after=evt_bogus&limit=x", problem.InvalidQueryParameter, []string{"limit INVALID_FORMAT"}}, // 400 wins
		{"after=" + cursor + "&after=" + cursor, problem.InvalidQueryParameter, []string{"after INVALID_FORMAT"}},
		{"cursor=" + cursor, problem.UnknownQueryParameter, []string{"cursor UNKNOWN_PARAMETER"}},
	} {
		req := request{path: "/v1/events?" + tc.query, key: "live"}
		pb := wantProblem(t, req, h.do(req), tc.code)
		var fields []string
		for _, f := range pb.Errors {
			fields = append(fields, f.Field+" "+f.Code)
		}
		if !slices.Equal(fields, tc.fields) {
			t.Errorf("%s: errors %v; want %v", tc.query, fields, tc.fields)
		}
	}
	// Authentication and headers come first (docs/contract.md section 2).
	wantProblem(t, request{path: "/v1/events?limit=0"}, h.do(request{path: "/v1/events?limit=0"}), problem.MissingAuthHeader)
	req := request{path: "/v1/events?limit=0", key: "noscope"}
	wantProblem(t, req, h.do(req), problem.InsufficientScope)
	req = request{path: "/v1/events/", key: "live"}
	wantProblem(t, req, h.do(req), problem.TrailingSlash)

	// A cursor from before this feed started (another edge's, restarted):
	// 410, the partner lists again. The two edges share one clock, as a
	// fleet's do, so "before" is one edge's walk preceding the other's.
	fleet := testkit.From(testkit.Epoch)
	other := newHarness(t, harnessOptions{now: fleet})
	old := other.listCursor("live")
	fresh := newHarness(t, harnessOptions{now: fleet})
	fresh.listCursor("live")
	req = request{path: "/v1/events?after=" + old, key: "live"}
	wantProblem(t, req, fresh.do(req), problem.EventsCursorExpired)
	// Without after: from the oldest event kept, next a valid cursor.
	res := h.do(request{path: "/v1/events", key: "live"})
	var a eventsAnswer
	if res.status != http.StatusOK || json.Unmarshal(res.body, &a) != nil || !strings.HasPrefix(a.Meta.Events.Next, "evt_") {
		t.Fatalf("events without after: %d %s", res.status, short(res.body))
	}
	if got := h.events("live", a.Meta.Events.Next); len(got) != 0 {
		t.Errorf("after the feed's start: %v", got)
	}
}

// counted counts the Snapshot calls of a catalog; await, when set, makes
// it an upstream.Awaiter (a catalog that walks on the clock).
type counted struct {
	upstream.Catalog
	snapshots atomic.Int64
	awaits    atomic.Int64
	await     func() error
}

func (c *counted) Snapshot(ctx context.Context) (*upstream.Snapshot, error) {
	c.snapshots.Add(1)
	return c.Catalog.Snapshot(ctx)
}

func (c *counted) Await(context.Context) error {
	c.awaits.Add(1)
	if c.await == nil {
		return nil
	}
	return c.await()
}

// docs/contract.md section 24: reading the feed never asks the catalog
// for its snapshot (the PMS): 100 polls make no Snapshot call; a catalog
// that walks on the clock is asked to wait for its first snapshot, and
// its 503 (with Retry-After) before one exists is the answer.
func TestEventsNeverWalk(t *testing.T) {
	var live *counted
	var notYet atomic.Bool
	h := newHarness(t, harnessOptions{catalogs: func(l, s upstream.Catalog) (upstream.Catalog, upstream.Catalog) {
		live = &counted{Catalog: l, await: func() error {
			if notYet.Load() {
				return &upstream.Error{Kind: upstream.Unavailable, RetryAfter: 7 * time.Second, Err: errors.New("first walk")}
			}
			return nil
		}}
		return live, s
	}})
	cursor := h.listCursor("live")
	before := live.snapshots.Load()
	for range 100 {
		h.events("live", cursor)
	}
	if n := live.snapshots.Load() - before; n != 0 {
		t.Fatalf("100 polls of the feed asked the catalog %d times; want none", n)
	}
	if live.awaits.Load() < 100 {
		t.Fatalf("%d Awaits for 100 polls; want one each", live.awaits.Load())
	}
	notYet.Store(true)
	req := request{path: "/v1/events?after=" + cursor, key: "live"}
	res := h.do(req)
	wantProblem(t, req, res, problem.ServiceUnavailable)
	if ra := res.header.Get("Retry-After"); ra != "7" {
		t.Errorf("Retry-After %q; want the catalog's 7", ra)
	}
}

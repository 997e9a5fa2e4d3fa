// This file is copied next to the client oapi-codegen generates from
// docs/openapi.yaml, in a module of its own in a temporary directory, and
// run there by partnertest's TestGoClientAgainstDemo: the client is made
// where the test runs, never committed. The demo's address and keys come
// from the environment.
package goclient

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
)

var (
	demoBase    = os.Getenv("DEMO_BASE")
	demoDocsURL = os.Getenv("DEMO_DOCS_URL")
	liveKey     = os.Getenv("DEMO_LIVE_KEY")
)

// strictDecode decodes body into v refusing unknown fields: a body the
// generated type cannot hold is a decode mismatch.
func strictDecode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// A partner's Go client against the demo: every page of the list (page 1
// without asOf, the others pinned to its cursor with asOf, as the docs'
// recipe says), every property by id, the events feed followed, and a 404,
// three 422s and a 401 decoded into their typed problems; no answer fails
// to decode into its generated type.
func TestGoClientAgainstDemo(t *testing.T) {
	if demoBase == "" {
		t.Fatal("DEMO_BASE unset: this test runs from partnertest's TestGoClientAgainstDemo")
	}
	ctx := context.Background()
	auth := func(key string) RequestEditorFn {
		return func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+key)
			return nil
		}
	}
	c, err := NewClientWithResponses(strings.TrimSuffix(demoBase, "/"), WithRequestEditorFn(auth(liveKey)))
	if err != nil {
		t.Fatal(err)
	}
	const ua = "partnertest-go/1.0"
	mismatches := 0
	mismatch := func(what string, err error) {
		if err != nil {
			mismatches++
			t.Errorf("%s: decode mismatch: %v", what, err)
		}
	}

	info, err := c.GetApiInfoWithResponse(ctx, &GetApiInfoParams{UserAgent: ua})
	if err != nil {
		t.Fatalf("GET /v1/: %v", err) // info is nil: no status to show
	}
	if info.JSON200 == nil {
		t.Fatalf("GET /v1/: status %d", info.StatusCode())
	}
	mismatch("api info", strictDecode(info.Body, new(ApiInfoResponse)))
	if info.JSON200.Data.DocumentationUrl != demoDocsURL {
		t.Errorf("documentationUrl %q, want the demo's docs %q", info.JSON200.Data.DocumentationUrl, demoDocsURL)
	}

	perPage := int32(5)
	var ids []string
	total := int64(-1)
	var cursor EventsCursor // the first page's: the feed's position at the list, and its snapshot
	for page := int32(1); ; page++ {
		params := &ListPropertiesParams{Page: &page, PerPage: &perPage, UserAgent: ua}
		if page > 1 {
			params.AsOf = &cursor
		}
		res, err := c.ListPropertiesWithResponse(ctx, params)
		if err != nil || res.JSON200 == nil {
			t.Fatalf("list page %d: %v, status %d: %s", page, err, res.StatusCode(), res.Body)
		}
		mismatch("list page", strictDecode(res.Body, new(PropertyList)))
		if page == 1 {
			cursor = res.JSON200.Meta.Events.Next
		} else if res.JSON200.Meta.Pagination.Total != total || res.JSON200.Meta.Events.Next != cursor {
			t.Errorf("page %d with asOf: total %d, next %s; want page 1's %d, %s", page,
				res.JSON200.Meta.Pagination.Total, res.JSON200.Meta.Events.Next, total, cursor)
		}
		total = res.JSON200.Meta.Pagination.Total
		for _, p := range res.JSON200.Data {
			ids = append(ids, p.Id.String())
		}
		if len(res.JSON200.Data) == 0 || int64(len(ids)) >= total {
			break
		}
		if page > 1000 {
			t.Fatal("the list does not end")
		}
	}
	if total <= int64(perPage) || int64(len(ids)) != total {
		t.Fatalf("listed %d properties over pages, total %d; want several pages", len(ids), total)
	}
	for _, id := range ids {
		uid, err := uuidOf(id)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.GetPropertyWithResponse(ctx, uid, &GetPropertyParams{UserAgent: ua})
		if err != nil || res.JSON200 == nil || res.JSON200.Data.Id.String() != id {
			t.Fatalf("get %s: %v, status %d", id, err, res.StatusCode())
		}
		mismatch("property", strictDecode(res.Body, new(PropertyResponse)))
	}

	// The events feed (the demo's PMS was changed before this test ran):
	// followed from its oldest event to its end, two at a time, every event
	// of a known type; then from the list's cursor (taken after the
	// change): nothing, and the cursor back; a cursor the API never issued
	// is a typed 422.
	follow := func(after *After) ([]Event, EventsCursor) {
		limit := int32(2)
		var out []Event
		for pages := 0; ; pages++ {
			res, err := c.ListEventsWithResponse(ctx, &ListEventsParams{After: after, Limit: &limit, UserAgent: ua})
			if err != nil || res.JSON200 == nil {
				t.Fatalf("events after %v: %v, status %d: %s", after, err, res.StatusCode(), res.Body)
			}
			mismatch("events page", strictDecode(res.Body, new(EventList)))
			out = append(out, res.JSON200.Data...)
			next := res.JSON200.Meta.Events.Next
			if after = &next; !res.JSON200.Meta.Events.HasMore || pages > 1000 {
				return out, next
			}
		}
	}
	all, _ := follow(nil)
	if len(all) == 0 {
		t.Fatal("the feed holds no event: the demo's PMS was changed before this test")
	}
	for _, e := range all {
		if !e.Type.Valid() || e.Object != EventObjectEvent || e.Data.Id.String() == "" {
			t.Errorf("event %+v", e)
		}
	}
	if since, next := follow(&cursor); len(since) != 0 || next != cursor {
		t.Errorf("after the list's cursor: %d events, next %q; want none and the cursor back, %q", len(since), next, cursor)
	}
	made := "evt_00000000000000000000000000"
	badAfter, err := c.ListEventsWithResponse(ctx, &ListEventsParams{After: &made, UserAgent: ua})
	if err != nil || badAfter.ApplicationproblemJSON422 == nil {
		t.Fatalf("made-up cursor: %v, status %d: %s", err, badAfter.StatusCode(), badAfter.Body)
	}
	if p := badAfter.ApplicationproblemJSON422; p.Code != ValidationFailedProblemCodeVALIDATIONFAILED || len(p.Errors) != 1 ||
		p.Errors[0].Field != "after" || p.Errors[0].Code != INVALIDFORMAT {
		t.Errorf("422 for a made-up cursor %+v", p)
	}
	mismatch("422 after", strictDecode(badAfter.Body, new(ValidationFailedProblem)))
	// An event's id is a cursor, but not a list's: asOf refuses it, typed;
	// a snapshot no longer held would be the typed 410.
	evID := all[0].Id
	badAsOf, err := c.ListPropertiesWithResponse(ctx, &ListPropertiesParams{AsOf: &evID, UserAgent: ua})
	if err != nil || badAsOf.ApplicationproblemJSON422 == nil {
		t.Fatalf("asOf an event id: %v, status %d: %s", err, badAsOf.StatusCode(), badAsOf.Body)
	}
	if p := badAsOf.ApplicationproblemJSON422; len(p.Errors) != 1 || p.Errors[0].Field != "asOf" || p.Errors[0].Code != INVALIDFORMAT {
		t.Errorf("422 for asOf an event id %+v", p)
	}
	var expired *ListSnapshotExpiredProblem = badAsOf.ApplicationproblemJSON410
	if expired != nil {
		t.Errorf("a 422 decoded as a 410: %+v", expired)
	}

	// 404: a property that does not exist.
	missing, _ := uuidOf("0c8ea9b2-6a5e-4d0a-9c7b-3f1e2d4a5b6c")
	nf, err := c.GetPropertyWithResponse(ctx, missing, &GetPropertyParams{UserAgent: ua})
	if err != nil || nf.ApplicationproblemJSON404 == nil {
		t.Fatalf("404: %v, status %d: %s", err, nf.StatusCode(), nf.Body)
	}
	if p := nf.ApplicationproblemJSON404; p.Code != PropertyNotFoundProblemCodePROPERTYNOTFOUND || p.Status != 404 || len(p.Errors) != 0 {
		t.Errorf("404 problem %+v", p)
	}
	mismatch("404", strictDecode(nf.Body, new(PropertyNotFoundProblem)))

	// 422: perPage out of range.
	zero := int32(0)
	vf, err := c.ListPropertiesWithResponse(ctx, &ListPropertiesParams{PerPage: &zero, UserAgent: ua})
	if err != nil || vf.ApplicationproblemJSON422 == nil {
		t.Fatalf("422: %v, status %d: %s", err, vf.StatusCode(), vf.Body)
	}
	if p := vf.ApplicationproblemJSON422; p.Code != ValidationFailedProblemCodeVALIDATIONFAILED || p.Status != 422 ||
		len(p.Errors) != 1 || p.Errors[0].Code != OUTOFRANGE || p.Errors[0].Field != "perPage" {
		t.Errorf("422 problem %+v", p)
	}
	mismatch("422", strictDecode(vf.Body, new(ValidationFailedProblem)))

	// 401: an unknown key (from an address of its own: the demo throttles
	// an address after one invalid key).
	bad, err := NewClientWithResponses(strings.TrimSuffix(demoBase, "/"), WithRequestEditorFn(auth("svc_live_NoSuchKeyNoSuchKeyNoSuchKey01")),
		WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("X-Forwarded-For", os.Getenv("DEMO_UNKNOWN_FROM"))
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	un, err := bad.ListPropertiesWithResponse(ctx, &ListPropertiesParams{UserAgent: ua})
	if err != nil || un.ApplicationproblemJSON401 == nil {
		t.Fatalf("401: %v, status %d: %s", err, un.StatusCode(), un.Body)
	}
	if p := un.ApplicationproblemJSON401; p.Code != UnauthorizedProblemCodeINVALIDAPIKEY || p.Status != 401 {
		t.Errorf("401 problem %+v", p)
	}
	mismatch("401", strictDecode(un.Body, new(UnauthorizedProblem)))

	// Health, unauthenticated.
	h, err := c.GetHealthWithResponse(ctx)
	if err != nil || h.JSON200 == nil || h.JSON200.Status != Ok {
		t.Fatalf("health: %v, status %d", err, h.StatusCode())
	}
	t.Logf("Go client: %d pages of %d, %d properties fetched, %d events followed, 404/422/401 typed, %d decode mismatches",
		(total+int64(perPage)-1)/int64(perPage), perPage, len(ids), len(all), mismatches)
}

// uuidOf parses a property id as the generated client's PropertyId.
func uuidOf(s string) (PropertyId, error) {
	var id PropertyId
	err := id.UnmarshalText([]byte(s))
	return id, err
}

package edge_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
)

// docs/contract.md section 1.
func TestRoutes(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := activeIDs(t, h.live, testBrand)[0]

	t.Run("api info", func(t *testing.T) {
		req := request{path: "/v1/", key: "live"}
		env := wantOK(t, req, h.do(req))
		var info map[string]any
		if err := json.Unmarshal(env.Data, &info); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"object": "api_info", "apiVersion": "v1", "documentationUrl": testDocsURL}
		if len(info) != len(want) {
			t.Errorf("api info = %v, want %v", info, want)
		}
		for k, v := range want {
			if info[k] != v {
				t.Errorf("api info %s = %v, want %v", k, info[k], v)
			}
		}
		if env.Meta.Pagination != nil {
			t.Errorf("api info has pagination")
		}
	})

	for _, tc := range []struct {
		method, path string
		code         problem.Code
		canonical    string // named in detail
	}{
		{"GET", "/v1", problem.RouteNotFound, ""},
		{"GET", "/", problem.RouteNotFound, ""},
		{"GET", "/v2/properties", problem.RouteNotFound, ""},
		{"GET", "/v1/hotels", problem.RouteNotFound, ""},
		{"GET", "/v1/properties/" + id + "/rooms", problem.RouteNotFound, ""},
		{"GET", "/health", problem.RouteNotFound, ""},
		{"DELETE", "/nowhere", problem.RouteNotFound, ""},
		{"GET", "/v1/properties/", problem.TrailingSlash, "/v1/properties"},
		{"GET", "/v1/health/", problem.TrailingSlash, "/v1/health"},
		{"GET", "/v1/properties/" + id + "/", problem.TrailingSlash, "/v1/properties/" + id},
		{"GET", "/v1/Properties", problem.InvalidPathCasing, "/v1/properties"},
		{"GET", "/V1/", problem.InvalidPathCasing, "/v1/"},
		{"GET", "/v1/HEALTH", problem.InvalidPathCasing, "/v1/health"},
		{"GET", "/v1/PROPERTIES/" + id, problem.InvalidPathCasing, "/v1/properties/" + id},
		{"POST", "/v1/properties", problem.MethodNotAllowed, ""},
		{"PUT", "/v1/properties/" + id, problem.MethodNotAllowed, ""},
		{"DELETE", "/v1/", problem.MethodNotAllowed, ""},
		{"PATCH", "/v1/health", problem.MethodNotAllowed, ""},
		{"OPTIONS", "/v1/properties", problem.MethodNotAllowed, ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req := request{method: tc.method, path: tc.path, key: "live"}
			res := h.do(req)
			p := wantProblem(t, req, res, tc.code)
			if tc.canonical != "" && !strings.Contains(p.Detail, tc.canonical) {
				t.Errorf("detail %q does not name %s", p.Detail, tc.canonical)
			}
			if tc.code == problem.MethodNotAllowed && res.header.Get("Allow") != "GET" {
				t.Errorf("Allow = %q, want GET", res.header.Get("Allow"))
			}
			if len(p.Errors) != 0 {
				t.Errorf("errors = %v, want []", p.Errors)
			}
			if loc := res.header.Get("Location"); loc != "" {
				t.Errorf("redirected to %s", loc)
			}
		})
	}

	t.Run("HEAD is not allowed", func(t *testing.T) {
		req := request{method: http.MethodHead, path: "/v1/properties", key: "live"}
		res := h.do(req)
		if res.status != http.StatusMethodNotAllowed || res.header.Get("Allow") != "GET" {
			t.Errorf("HEAD: %d Allow=%q", res.status, res.header.Get("Allow"))
		}
	})

	t.Run("property id", func(t *testing.T) {
		upper := strings.ToUpper(id)
		req := request{path: "/v1/properties/" + upper, key: "live"}
		env := wantOK(t, req, h.do(req))
		var p map[string]any
		_ = json.Unmarshal(env.Data, &p)
		if p["id"] != id {
			t.Errorf("upper-case id answered id %v, want %s", p["id"], id)
		}
		for _, bad := range []string{"123", "not-a-uuid", strings.ReplaceAll(id, "-", ""), id + "0", "g" + id[1:], "%7B" + id[1:]} {
			req := request{path: "/v1/properties/" + bad, key: "live"}
			p := wantProblem(t, req, h.do(req), problem.InvalidPathParameter)
			if len(p.Errors) != 1 || p.Errors[0].Field != "propertyId" || p.Errors[0].Code != "INVALID_FORMAT" {
				t.Errorf("%s: errors %+v", bad, p.Errors)
			}
		}
	})
}

// docs/contract.md section 2: the first failing check answers.
func TestOrderOfChecks(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	badUA := map[string][]string{"User-Agent": {"x"}}
	badAccept := map[string][]string{"Accept": {"text/html"}}
	both := map[string][]string{"User-Agent": {"x"}, "Accept": {"text/html"}}
	for _, tc := range []struct {
		name string
		req  request
		code problem.Code
	}{
		{"route before auth", request{path: "/v1/nope"}, problem.RouteNotFound},
		{"trailing slash before auth", request{path: "/v1/properties/"}, problem.TrailingSlash},
		{"method before auth", request{method: "POST", path: "/v1/properties"}, problem.MethodNotAllowed},
		{"auth before headers", request{path: "/v1/properties", headers: badUA}, problem.MissingAuthHeader},
		{"auth before bad correlation id", request{path: "/v1/", key: "nope", headers: map[string][]string{"Svc-Correlation-Id": {"bad id"}}}, problem.InvalidAPIKey},
		{"key authorisation before headers", request{path: "/v1/properties", key: "suspended", headers: badUA}, problem.APIKeySuspended},
		{"headers before Accept", request{path: "/v1/properties", key: "live", headers: both}, problem.InvalidHeader},
		{"body before Accept", request{method: "GET", path: "/v1/properties", key: "live", headers: badAccept, body: strings.NewReader("{}")}, problem.UnexpectedRequestBody},
		{"Accept before query", request{path: "/v1/properties?perPage=abc", key: "live", headers: badAccept}, problem.NotAcceptable},
		{"query before path parameter", request{path: "/v1/properties/bad?x=1", key: "live"}, problem.UnknownQueryParameter},
		{"path parameter before work", request{path: "/v1/properties/bad", key: "live"}, problem.InvalidPathParameter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, tc.req, h.do(tc.req), tc.code)
		})
	}
}

// docs/contract.md sections 1, 2 and 8: health skips steps 2 to 5.
func TestHealth(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, req := range []request{
		{path: "/v1/health", noUA: true},
		{path: "/v1/health?verbose=1&x=%zz;y", key: "nope", headers: map[string][]string{
			"Accept": {"text/html"}, "Svc-Correlation-Id": {"not valid!"}, "User-Agent": {"x", "y"},
		}},
		{path: "/v1/health", body: strings.NewReader("hello"), key: "expired"},
	} {
		res := h.do(req)
		if res.status != http.StatusOK || string(res.body) != `{"status":"ok"}` {
			t.Errorf("%s: %d %s", req.path, res.status, res.body)
		}
		if ct := res.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("health Content-Type %q", ct)
		}
		if res.header.Get("Svc-Correlation-Id") != "" {
			t.Errorf("health echoed an invalid correlation id")
		}
	}
	req := request{path: "/v1/health", headers: map[string][]string{"Svc-Correlation-Id": {"abc-123"}}}
	if got := h.do(req).header.Get("Svc-Correlation-Id"); got != "abc-123" {
		t.Errorf("health did not echo a valid correlation id: %q", got)
	}
}

// /v1 without its slash stays 404 ROUTE_NOT_FOUND (docs/contract.md
// section 1), and its detail points at the API root; other unknown paths
// get the plain detail.
func TestRouteNotFoundHintsAtTheRoot(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for path, hint := range map[string]bool{"/v1": true, "/V1": true, "/v2": false, "/v1/hotels": false} {
		req := request{path: path, key: "live"}
		p := wantProblem(t, req, h.do(req), problem.RouteNotFound)
		if got := strings.Contains(p.Detail, "/v1/"); got != hint {
			t.Errorf("%s: detail %q, naming /v1/: %v, want %v", path, p.Detail, got, hint)
		}
	}
}

// notFoundCatalog is a PMS that knows no property by id.
type notFoundCatalog struct{ upstream.Catalog }

func (notFoundCatalog) Property(context.Context, string) (*upstream.Item, error) {
	return nil, &upstream.Error{Kind: upstream.NotFound}
}

// PROPERTY_NOT_FOUND reads the same whether the key may not see the id or
// the PMS does not know it: a partner cannot tell which (docs/contract.md
// section 3).
func TestPropertyNotFoundWordedOnce(t *testing.T) {
	h := newHarness(t, harnessOptions{catalogs: func(live, sb upstream.Catalog) (upstream.Catalog, upstream.Catalog) {
		return notFoundCatalog{live}, sb
	}})
	ids := activeIDs(t, h.live, testBrand)
	unknown := request{path: "/v1/properties/" + ids[0], key: "live"}
	byPMS := wantProblem(t, unknown, h.do(unknown), problem.PropertyNotFound)
	other := request{path: "/v1/properties/" + ids[5], key: "granted"} // granted ids[:3]
	byKey := wantProblem(t, other, h.do(other), problem.PropertyNotFound)
	if byPMS.Detail != byKey.Detail {
		t.Errorf("PROPERTY_NOT_FOUND worded twice:\n the PMS's 404: %q\n the key's grant: %q", byPMS.Detail, byKey.Detail)
	}
}

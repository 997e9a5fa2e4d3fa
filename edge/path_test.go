package edge_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/problem"
)

// docs/contract.md section 10: unreserved characters are decoded before
// routing; an encoded '/' or other reserved character never separates.
func TestPercentEncodedPaths(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := activeIDs(t, h.live, testBrand)[0]
	encFirst := fmt.Sprintf("%%%02X", id[0]) + id[1:] // the first hex digit encoded

	for _, path := range []string{
		"/v1/propert%69es",
		"/v1/%70%72%6F%70%65%72%74%69%65%73", // all of it, upper-case hex
		"/%76%31/properties",
		"/v1/properties?page=1",
	} {
		req := request{path: path, key: "live"}
		env := wantOK(t, req, h.do(req))
		if env.Meta.Pagination == nil {
			t.Errorf("%s: not the list route", path)
		}
	}
	req := request{path: "/v1/properties/" + encFirst, key: "live"}
	wantOK(t, req, h.do(req))
	req = request{path: "/v1/%68ealth"}
	if res := h.do(req); res.status != http.StatusOK || string(res.body) != `{"status":"ok"}` {
		t.Errorf("/v1/%%68ealth: %d %s", res.status, res.body)
	}

	for _, tc := range []struct {
		path string
		code problem.Code
	}{
		{"/v1/properties%2Fx", problem.RouteNotFound},
		{"/v1/properties%2f" + id, problem.RouteNotFound},
		{"/v1%2Fproperties", problem.RouteNotFound},
		{"/v1/properties%2F", problem.RouteNotFound},
		{"/V1/PROPERTIES%2Fx", problem.RouteNotFound},
		{"/v1/properties%3F", problem.RouteNotFound},
		{"/v1/health%23", problem.RouteNotFound},
		{"/v1/properties/ab%2Fcd", problem.InvalidPathParameter},
		{"/v1/properties/%2F", problem.InvalidPathParameter},
	} {
		req := request{path: tc.path, key: "live"}
		wantProblem(t, req, h.do(req), tc.code)
	}

	// An encoded '-' is unreserved: decoded, the id is whole again.
	req = request{path: "/v1/properties/" + id[:8] + "%2D" + id[9:], key: "live"}
	wantOK(t, req, h.do(req))

	// Diagnosis runs on the decoded path: casing and trailing slash name
	// the canonical route; instance is the path as routed.
	for _, tc := range []struct {
		path, instance string
		code           problem.Code
	}{
		{"/v1/Propert%69es", "/v1/Properties", problem.InvalidPathCasing},
		{"/v1/propert%69es/", "/v1/properties/", problem.TrailingSlash},
	} {
		res := h.do(request{path: tc.path, key: "live"})
		var p struct{ Code, Instance, Detail string }
		if err := json.Unmarshal(res.body, &p); err != nil || p.Code != string(tc.code) || p.Instance != tc.instance ||
			!strings.Contains(p.Detail, "/v1/properties") {
			t.Errorf("%s: %d %s", tc.path, res.status, res.body)
		}
	}
}

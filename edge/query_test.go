package edge_test

import (
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/problem"
)

// docs/contract.md section 5.
func TestQueryParameters(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	id := activeIDs(t, h.live, testBrand)[0]
	type fe struct{ field, code string }
	for _, tc := range []struct {
		path    string
		code    problem.Code
		errors  []fe
		suggest string // a detail must suggest this name
	}{
		{"/v1/properties?page=%zz", problem.MalformedQueryString, nil, ""},
		{"/v1/properties?page=1;perPage=2", problem.MalformedQueryString, nil, ""},
		{"/v1/properties?per%ZZ=1", problem.MalformedQueryString, nil, ""},
		{"/v1/properties?limit=5", problem.UnknownQueryParameter, []fe{{"limit", "UNKNOWN_PARAMETER"}}, ""},
		{"/v1/properties?perpage=5", problem.UnknownQueryParameter, []fe{{"perpage", "UNKNOWN_PARAMETER"}}, "perPage"},
		{"/v1/properties?per_page=5", problem.UnknownQueryParameter, []fe{{"per_page", "UNKNOWN_PARAMETER"}}, "perPage"},
		{"/v1/properties?PerPage=5", problem.UnknownQueryParameter, []fe{{"PerPage", "UNKNOWN_PARAMETER"}}, "perPage"},
		{"/v1/properties?per-page=5", problem.UnknownQueryParameter, []fe{{"per-page", "UNKNOWN_PARAMETER"}}, "perPage"},
		{"/v1/properties?Page=2", problem.UnknownQueryParameter, []fe{{"Page", "UNKNOWN_PARAMETER"}}, "page"},
		{"/v1/properties?a=1&b=2&a=3&perPage=0", problem.UnknownQueryParameter, []fe{{"a", "UNKNOWN_PARAMETER"}, {"b", "UNKNOWN_PARAMETER"}}, ""},
		{"/v1/?page=1", problem.UnknownQueryParameter, []fe{{"page", "UNKNOWN_PARAMETER"}}, ""},
		{"/v1/properties/" + id + "?with=rooms", problem.UnknownQueryParameter, []fe{{"with", "UNKNOWN_PARAMETER"}}, ""},
		{"/v1/properties?page=", problem.InvalidQueryParameter, []fe{{"page", "INVALID_FORMAT"}}, ""},
		{"/v1/properties?page", problem.InvalidQueryParameter, []fe{{"page", "INVALID_FORMAT"}}, ""},
		{"/v1/properties?page=%2B1", problem.InvalidQueryParameter, []fe{{"page", "INVALID_FORMAT"}}, ""},
		{"/v1/properties?page=-1", problem.InvalidQueryParameter, []fe{{"page", "INVALID_FORMAT"}}, ""},
		{"/v1/properties?page=1.0", problem.InvalidQueryParameter, []fe{{"page", "INVALID_FORMAT"}}, ""},
		{"/v1/properties?page=0x1", problem.InvalidQueryParameter, []fe{{"page", "INVALID_FORMAT"}}, ""},
		{"/v1/properties?page=%201", problem.InvalidQueryParameter, []fe{{"page", "INVALID_FORMAT"}}, ""},
		{"/v1/properties?page=1e3", problem.InvalidQueryParameter, []fe{{"page", "INVALID_FORMAT"}}, ""},
		{"/v1/properties?page=1&page=2", problem.InvalidQueryParameter, []fe{{"page", "INVALID_FORMAT"}}, ""},
		{"/v1/properties?page=x&perPage=y", problem.InvalidQueryParameter, []fe{{"page", "INVALID_FORMAT"}, {"perPage", "INVALID_FORMAT"}}, ""},
		{"/v1/properties?page=x&perPage=0", problem.InvalidQueryParameter, []fe{{"page", "INVALID_FORMAT"}}, ""},
		{"/v1/properties?page=0", problem.ValidationFailed, []fe{{"page", "OUT_OF_RANGE"}}, ""},
		{"/v1/properties?page=2147483648", problem.ValidationFailed, []fe{{"page", "OUT_OF_RANGE"}}, ""},
		{"/v1/properties?page=99999999999999999999999", problem.ValidationFailed, []fe{{"page", "OUT_OF_RANGE"}}, ""},
		{"/v1/properties?perPage=0", problem.ValidationFailed, []fe{{"perPage", "OUT_OF_RANGE"}}, ""},
		{"/v1/properties?perPage=101", problem.ValidationFailed, []fe{{"perPage", "OUT_OF_RANGE"}}, ""},
		{"/v1/properties?page=0&perPage=101", problem.ValidationFailed, []fe{{"page", "OUT_OF_RANGE"}, {"perPage", "OUT_OF_RANGE"}}, ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			req := request{path: tc.path, key: "live"}
			p := wantProblem(t, req, h.do(req), tc.code)
			if len(p.Errors) != len(tc.errors) {
				t.Fatalf("errors %+v, want %v", p.Errors, tc.errors)
			}
			for i, want := range tc.errors {
				if p.Errors[i].Field != want.field || p.Errors[i].Code != want.code || p.Errors[i].Detail == "" {
					t.Errorf("errors[%d] = %+v, want %v", i, p.Errors[i], want)
				}
			}
			if tc.suggest != "" && !strings.Contains(p.Errors[0].Detail, `"`+tc.suggest+`"`) {
				t.Errorf("detail %q does not suggest %s", p.Errors[0].Detail, tc.suggest)
			}
		})
	}

	for _, path := range []string{"/v1/properties?page=1&perPage=100", "/v1/properties?page=2147483647",
		"/v1/properties?perPage=1", "/v1/properties?page=007", "/v1/properties?", "/v1/properties?&page=1&"} {
		req := request{path: path, key: "live"}
		wantOK(t, req, h.do(req))
	}
}

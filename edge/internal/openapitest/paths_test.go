package openapitest

import (
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/problem"
)

// TestPathsRouteAsTheEdgeRoutesThem: percent-encoded unreserved characters
// are decoded before routing, and an encoded "/" never separates segments
// (docs/contract.md section 10).
func TestPathsRouteAsTheEdgeRoutesThem(t *testing.T) {
	c := checker(t)
	list := byName(validReplies(t), "list past the end")
	cases := []struct {
		name, path string
		r          reply
	}{
		{"encoded letter is the list", "/v1/propert%69es", list},
		{"encoded letter, lower-case hex", "/v1/propert%69es?page=9", list},
		{"encoded slash is no separator", "/v1/properties%2Fx", problemReply("GET", "/v1/properties%2Fx", problemFor(problem.RouteNotFound))},
		{"encoded slash inside an id", "/v1/properties/abc%2fdef", problemReply("GET", "/v1/properties/abc%2fdef", problemFor(problem.InvalidPathParameter))},
	}
	for _, tc := range cases {
		if err := c.Check("GET", tc.path, tc.r.status, tc.r.header, tc.r.body); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// The list answer to a path that holds an encoded "/" is drift.
	if err := c.Check("GET", "/v1/properties%2F", list.status, list.header, list.body); err == nil {
		t.Errorf("200 list for /v1/properties%%2F passed")
	}
}

// TestInstanceNamesThePath: a problem's instance is the request path,
// compared once both are normalised, or, for a long path, its clipped
// beginning (docs/contract.md section 10: answers stay a few kilobytes).
func TestInstanceNamesThePath(t *testing.T) {
	c := checker(t)
	long := "/v1/" + strings.Repeat("%01", 2000)
	notFound := problemReply("GET", long, problemFor(problem.RouteNotFound))
	withInstance := func(r reply, instance string) reply {
		r.body = mutateJSON(t, r.body, func(m map[string]any) { m["instance"] = instance })
		return r
	}
	query := problemReply("GET", "/v1/properties?page=x", problemFor(problem.InvalidQueryParameter))
	pass := []struct {
		name, path string
		r          reply
	}{
		{"normalised instance of an encoded path", "/v1/propert%69es?page=x", withInstance(query, "/v1/properties")},
		{"escapes compared case-insensitively", "/v1/x%2f", withInstance(notFound, "/v1/x%2F")},
		{"clipped with an ellipsis", long, withInstance(notFound, long[:1024]+"…")},
		{"clipped with three dots", long, withInstance(notFound, long[:300]+"...")},
		{"clipped without a marker", long, withInstance(notFound, long[:128])},
		{"clipped inside an escape", long, withInstance(notFound, long[:1025]+"…")},
	}
	for _, tc := range pass {
		if err := c.Check("GET", tc.path, tc.r.status, tc.r.header, tc.r.body); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	fail := []struct {
		name, path string
		r          reply
		want       string
	}{
		{"clipped too short", long, withInstance(notFound, long[:127]+"…"), "instance"},
		{"clipped from another path", long, withInstance(notFound, "/v1/"+strings.Repeat("%02", 400)+"…"), "instance"},
		{"longer than the path", "/v1/x", withInstance(notFound, "/v1/x"+strings.Repeat("y", 200)), "instance"},
		{"the whole 6 KB path echoed", long, withInstance(notFound, long), "/instance"},
		{"decoded reserved character", "/v1/x%2Fy", withInstance(notFound, "/v1/x/y"), "instance"},
	}
	for _, tc := range fail {
		err := c.Check("GET", tc.path, tc.r.status, tc.r.header, tc.r.body)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a failure naming %q", tc.name, err, tc.want)
		}
	}
}

func TestNormalizePath(t *testing.T) {
	for in, want := range map[string]string{
		"/v1/properties":      "/v1/properties",
		"/v1/propert%69es":    "/v1/properties",
		"/v1/%7e%2D%2e%5F%41": "/v1/~-._A",
		"/v1/a%2fb":           "/v1/a%2Fb",
		"/v1/%e2%80%a6":       "/v1/%E2%80%A6",
		"/v1/%":               "/v1/%",
		"/v1/%4":              "/v1/%4",
		"/v1/%zz%41":          "/v1/%zzA",
		"/v1/%2541":           "/v1/%2541",
	} {
		if got := normalizePath(in); got != want {
			t.Errorf("normalizePath(%q) = %q, want %q", in, got, want)
		}
	}
}

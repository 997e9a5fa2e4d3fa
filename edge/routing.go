package edge

import (
	"net/http"
	"strings"

	"github.com/partner-edge/partner-edge/problem"
)

// notFound answers paths chi did not route: a known route with a trailing
// slash (400 TRAILING_SLASH) or in other casing (400 INVALID_PATH_CASING),
// anything else 404 ROUTE_NOT_FOUND; no redirects. It reads the escaped
// path as chi routed it: a segment still holding an escape matches none.
func (s *server) notFound(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	trimmed, slashed := strings.CutSuffix(p, "/")
	if slashed && trimmed != "" {
		if canon, ok := matchRoute(trimmed, false); ok {
			s.fail(w, r, problem.New(problem.TrailingSlash,
				"The path has a trailing slash. Use %s.", canon))
			return
		}
	}
	for _, candidate := range []string{p, trimmed} {
		if canon, ok := matchRoute(candidate, true); ok {
			s.fail(w, r, problem.New(problem.InvalidPathCasing,
				"Paths are case-sensitive. Use %s.", canon))
			return
		}
	}
	if strings.EqualFold(p, "/v1") {
		// The contract keeps /v1 a 404 (docs/contract.md section 1), but a
		// partner one slash away from the API root is told so.
		s.fail(w, r, problem.New(problem.RouteNotFound, "No endpoint exists at this path. The API root is /v1/, with its slash."))
		return
	}
	s.fail(w, r, problem.New(problem.RouteNotFound, "No endpoint exists at this path."))
}

// methodNotAllowed answers a known route with a method it does not serve:
// Allow names those it does.
func (s *server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	methods := allowGET
	if i := routeIndex(r.URL.EscapedPath(), false); i >= 0 {
		methods = allow[v1Routes[i].pattern]
	}
	detail := "Only GET is supported on this endpoint."
	if methods[0] != http.MethodGet {
		detail = "This endpoint supports " + methods[0] + " only."
	}
	s.fail(w, r, &problem.Error{
		Code:   problem.MethodNotAllowed,
		Detail: detail,
		Header: http.Header{"Allow": methods},
	})
}

var allowGET = []string{http.MethodGet}

// routeSegments are the patterns of v1Routes split once, and
// maxRouteSegments the most segments of any (a longer path matches none and
// is not split at all): the 404 path runs on whatever a partner sends, so it
// does no per-request work it can avoid.
var routeSegments, maxRouteSegments = func() ([][]string, int) {
	segs, n := make([][]string, len(v1Routes)), 0
	for i, rt := range v1Routes {
		segs[i] = strings.Split(rt.pattern, "/")
		n = max(n, len(segs[i]))
	}
	return segs, n
}()

// maxEchoedParam bounds how much of a sent parameter value the canonical
// path in a detail repeats.
const maxEchoedParam = 64

// matchRoute matches path against the route patterns of v1Routes, exactly
// or ignoring case, and returns the canonical path: the pattern's literal
// segments with the sent parameter values (clipped).
func matchRoute(path string, ignoreCase bool) (string, bool) {
	i := routeIndex(path, ignoreCase)
	if i < 0 {
		return "", false
	}
	psegs, segs := routeSegments[i], strings.Split(path, "/")
	canon := make([]string, len(segs))
	for i, ps := range psegs {
		canon[i] = ps
		if strings.HasPrefix(ps, "{") {
			canon[i] = problem.Clip(segs[i], maxEchoedParam)
		}
	}
	return strings.Join(canon, "/"), true
}

// routeIndex is the index in v1Routes of the route path matches, exactly
// or ignoring case; -1: none.
func routeIndex(path string, ignoreCase bool) int {
	if strings.Count(path, "/")+1 > maxRouteSegments {
		return -1
	}
	segs := strings.Split(path, "/")
	for i, psegs := range routeSegments {
		if len(psegs) == len(segs) && segmentsMatch(psegs, segs, ignoreCase) {
			return i
		}
	}
	return -1
}

func segmentsMatch(psegs, segs []string, ignoreCase bool) bool {
	for i, ps := range psegs {
		switch {
		case strings.HasPrefix(ps, "{"):
			if segs[i] == "" {
				return false
			}
		case ps != segs[i] && !(ignoreCase && strings.EqualFold(ps, segs[i])):
			return false
		}
	}
	return true
}

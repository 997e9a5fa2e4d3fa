package edge

import (
	"net/http"
	"strings"

	"github.com/partner-edge/partner-edge/problem"
)

// notFound answers paths chi did not route: a known route with a trailing
// slash (400 TRAILING_SLASH), a known route in other casing (400
// INVALID_PATH_CASING), anything else 404 ROUTE_NOT_FOUND. No redirects.
func (s *server) notFound(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
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
	s.fail(w, r, problem.New(problem.RouteNotFound, "No endpoint exists at this path."))
}

// methodNotAllowed answers a known route with a method other than GET.
func (s *server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, &problem.Error{
		Code:   problem.MethodNotAllowed,
		Detail: "Only GET is supported on this endpoint.",
		Header: http.Header{"Allow": {"GET"}},
	})
}

// routeSegments are routePatterns split once: the 404 path runs on
// whatever a partner sends, so it does no per-request work it can avoid.
var routeSegments = func() [][]string {
	segs := make([][]string, len(routePatterns))
	for i, p := range routePatterns {
		segs[i] = strings.Split(p, "/")
	}
	return segs
}()

// matchRoute matches path against the route patterns of routes.go, exactly
// or ignoring case, and returns the canonical path: the pattern's literal
// segments with the sent parameter values.
func matchRoute(path string, ignoreCase bool) (string, bool) {
	segs := strings.Split(path, "/")
	for _, psegs := range routeSegments {
		if len(psegs) == len(segs) && segmentsMatch(psegs, segs, ignoreCase) {
			canon := make([]string, len(segs))
			for i, ps := range psegs {
				canon[i] = ps
				if strings.HasPrefix(ps, "{") {
					canon[i] = segs[i]
				}
			}
			return strings.Join(canon, "/"), true
		}
	}
	return "", false
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

package edge

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// routePatterns are the routes of v1 (DECISIONS.md section 1), for the
// trailing-slash and casing answers of routing.go. Keep in step with routes.
var routePatterns = []string{
	"/v1/",
	"/v1/health",
	"/v1/properties",
	"/v1/properties/{propertyId}",
}

// routes is the one place every route is registered. Middleware order is
// the order of checks of DECISIONS.md section 2: chi's routing (404, 400
// trailing slash or casing, 405) comes first; then authentication and key
// authorisation, the key's rate limit (when on), headers, Accept; query and
// path checks open each handler.
// The server span, when telemetry is on, wraps everything, so every answer
// (404s and panics included) is traced.
func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(withState, s.resolveClient, s.accessLog, s.recoverer, s.shed, s.deadline)
	r.NotFound(s.notFound)
	r.MethodNotAllowed(s.methodNotAllowed)

	r.Method(http.MethodGet, "/v1/health", s.handleHealth())
	r.Group(func(r chi.Router) {
		r.Use(s.authenticate, s.rateLimit, s.checkHeaders, s.checkAccept)
		r.Method(http.MethodGet, "/v1/", s.handleInfo())
		r.Method(http.MethodGet, "/v1/properties", s.handleListProperties())
		r.Method(http.MethodGet, "/v1/properties/{propertyId}", s.handleGetProperty())
	})
	if s.tel == nil {
		return r
	}
	return s.tel.Middleware()(r)
}

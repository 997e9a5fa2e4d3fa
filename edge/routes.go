package edge

import (
	"net/http"

	"github.com/go-chi/chi/v5"
)

// route is one route of v1 (docs/contract.md section 1).
type route struct {
	pattern string
	auth    bool // behind authentication and the request checks
	// handler makes the route's handler from exactly what it needs of s.
	handler func(s *server) http.Handler
}

// v1Routes is the one list of routes: routes registers them with chi, and
// routing.go diagnoses unrouted paths (trailing slash, casing) against the
// same patterns.
var v1Routes = []route{
	{"/v1/", true, func(s *server) http.Handler { return handleInfo(s.responder, s.info) }},
	{"/v1/health", false, func(s *server) http.Handler { return handleHealth(s.cfg.Healthy) }},
	{"/v1/properties", true, func(s *server) http.Handler { return handleListProperties(s.responder, s.catalogs, s.feeds) }},
	{"/v1/properties/{propertyId}", true, func(s *server) http.Handler { return handleGetProperty(s.responder, s.catalogs) }},
	{"/v1/events", true, func(s *server) http.Handler { return handleEvents(s.responder, s.catalogs, s.feeds) }},
}

// routes is the one place every route is registered. Middleware order is
// the order of checks of docs/contract.md section 2 (docs/architecture.md,
// "The path of one request"); query and path checks open each handler.
// withState wraps the router, so every answer (404s and panics included)
// is traced and has the request's one context (base.go).
func (s *server) routes() http.Handler {
	r := chi.NewRouter()
	r.Use(s.resolveClient, s.accessLog, s.recoverer, canonicalPath, closeOnBody, s.shed)
	r.NotFound(s.notFound)
	r.MethodNotAllowed(s.methodNotAllowed)

	for _, rt := range v1Routes {
		if !rt.auth {
			r.Method(http.MethodGet, rt.pattern, rt.handler(s))
		}
	}
	if s.cfg.Docs != nil && s.cfg.DocsPath != "" {
		// The documentation site: public pages outside /v1 and its rules.
		r.Mount(s.cfg.DocsPath, http.StripPrefix(s.cfg.DocsPath, s.cfg.Docs))
	}
	if s.oauth != nil { // RFC 9728; outside /v1 and its checks (tokenauth.go)
		r.Method(http.MethodGet, resourceMetadataPath, s.handleResourceMetadata())
	}
	r.Group(func(r chi.Router) {
		r.Use(s.authenticate, s.rateLimit, s.checkHeaders, s.checkAccept)
		for _, rt := range v1Routes {
			if rt.auth {
				r.Method(http.MethodGet, rt.pattern, rt.handler(s))
			}
		}
	})
	s.mux = r
	return s.withState(r)
}

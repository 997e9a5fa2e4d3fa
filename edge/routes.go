package edge

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/partner-edge/partner-edge/edge/keys"
)

// route is one route of v1 (docs/contract.md section 1).
type route struct {
	pattern string
	auth    bool // behind authentication and the request checks
	// scope is the scope the route needs besides properties:read ("":
	// none), checked with authentication (docs/contract.md section 26).
	scope string
	// methods are the methods it serves, in the order Allow names them.
	methods []method
}

// method is one method of a route.
type method struct {
	name string
	// body: the method takes a JSON request body (jsonbody.go); any other
	// request announcing one is 400 UNEXPECTED_REQUEST_BODY.
	body bool
	// handler makes the handler from exactly what it needs of s.
	handler func(s *server) http.Handler
}

func get(h func(s *server) http.Handler) []method {
	return []method{{name: http.MethodGet, handler: h}}
}

// v1Routes is the one list of routes: routes registers them with chi, and
// routing.go diagnoses unrouted paths (trailing slash, casing) and answers
// 405 with Allow against the same patterns.
var v1Routes = []route{
	{"/v1/", true, "", get(func(s *server) http.Handler { return handleInfo(s.responder, s.info) })},
	{"/v1/health", false, "", get(func(s *server) http.Handler { return handleHealth(s.cfg.Healthy) })},
	{"/v1/properties", true, "", get(func(s *server) http.Handler { return handleListProperties(s.responder, s.catalogs, s.feeds) })},
	{"/v1/properties/{propertyId}", true, "", get(func(s *server) http.Handler { return handleGetProperty(s.responder, s.catalogs) })},
	{"/v1/events", true, "", get(func(s *server) http.Handler { return handleEvents(s.responder, s.catalogs, s.feeds) })},
	// docs/contract.md section 26 (webhooks.go).
	{"/v1/webhook-endpoints", true, keys.ScopeWebhooksManage, []method{
		{http.MethodGet, false, func(s *server) http.Handler { return handleListWebhookEndpoints(s.responder, s.webhooks) }},
		{http.MethodPost, true, func(s *server) http.Handler { return handleCreateWebhookEndpoint(s.responder, s.webhooks) }},
	}},
	{"/v1/webhook-endpoints/{endpointId}", true, keys.ScopeWebhooksManage, []method{
		{http.MethodGet, false, func(s *server) http.Handler { return handleGetWebhookEndpoint(s.responder, s.webhooks) }},
		{http.MethodDelete, false, func(s *server) http.Handler { return handleDeleteWebhookEndpoint(s.responder, s.webhooks) }},
	}},
	{"/v1/webhook-endpoints/{endpointId}/enable", true, keys.ScopeWebhooksManage, []method{
		{http.MethodPost, false, func(s *server) http.Handler { return handleEnableWebhookEndpoint(s.responder, s.webhooks) }},
	}},
}

// allow is the Allow header of each route, by pattern: its methods.
var allow = func() map[string][]string {
	m := make(map[string][]string, len(v1Routes))
	for _, rt := range v1Routes {
		names := make([]string, len(rt.methods))
		for i, mt := range rt.methods {
			names[i] = mt.name
		}
		m[rt.pattern] = []string{strings.Join(names, ", ")}
	}
	return m
}()

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
			for _, mt := range rt.methods {
				r.Method(mt.name, rt.pattern, mt.handler(s))
			}
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
		r.Use(s.authenticate)
		for _, rt := range v1Routes {
			if !rt.auth {
				continue
			}
			for _, mt := range rt.methods {
				chain := make([]func(http.Handler) http.Handler, 0, 4)
				if rt.scope != "" {
					chain = append(chain, s.requireScope(rt.scope))
				}
				chain = append(chain, s.rateLimit, s.checkHeaders(mt.body), s.checkAccept)
				r.With(chain...).Method(mt.name, rt.pattern, mt.handler(s))
			}
		}
	})
	s.mux = r
	return s.withState(r)
}

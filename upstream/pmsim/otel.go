package pmsim

import (
	"net/http"

	"github.com/partner-edge/partner-edge/observability"
)

// Route templates of the Sim's API, as Route returns them.
const (
	RouteList = "/internal/v2/brands/{brandCode}/hotels"
	RouteGet  = "/internal/v2/brands/{brandCode}/hotels/{hotelId}"
)

// Route returns the route template that path matches (RouteList, RouteGet
// or the control route RouteStats), or "" when it matches none. It never
// returns the raw path, so its result is fit for span names and metric
// labels.
func Route(path string) string {
	if path == RouteStats {
		return RouteStats
	}
	_, _, r := route(path)
	return r
}

// Instrument returns h (typically a *Sim) traced by tel the way the edge
// is: one server span per request (tel.Middleware), continuing the caller's
// traceparent, named by Route (just the method when no route matches), the
// faults inside it. cmd/pmsim serves the Sim so (docs/observability.md);
// tests wrap a Sim the same way with a Telemetry of their own.
func Instrument(h http.Handler, tel *observability.Telemetry) http.Handler {
	named := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		observability.SetRoute(r.Context(), r.Method, Route(r.URL.Path))
		h.ServeHTTP(w, r)
	})
	return tel.Middleware()(named)
}

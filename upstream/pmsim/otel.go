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

// Route returns the route template that path matches (RouteList or
// RouteGet), or "" when it matches none. It never returns the raw path, so
// its result is fit for span names and metric labels.
func Route(path string) string {
	_, _, r := route(path)
	return r
}

// Instrument returns h (typically a *Sim) traced by tel the way the edge
// is: tel.Middleware() makes one server span per request, continuing the
// caller's traceparent, and the span is named by Route ("GET
// /internal/v2/brands/{brandCode}/hotels/{hotelId}"; just the method when
// no route matches). Faults (latency, errors, resets) happen inside the
// span. cmd/pmsim serves the Sim this way; tests that want the PMS's spans
// wrap a Sim the same way with a Telemetry of their own (service name
// "pmsim", an in-memory exporter).
func Instrument(h http.Handler, tel *observability.Telemetry) http.Handler {
	named := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		observability.SetRoute(r.Context(), r.Method, Route(r.URL.Path))
		h.ServeHTTP(w, r)
	})
	return tel.Middleware()(named)
}

package observability

import (
	"net/http"
	"net/http/pprof"
)

// AdminHandler returns the handler of the admin listener (EDGE_ADMIN_ADDR,
// loopback by default; never the public one): metrics at /metrics (nil: not
// served) and the net/http/pprof profiles under /debug/pprof/ (index,
// cmdline, profile, symbol, trace and the named profiles such as heap and
// goroutine). Everything else is 404. It uses a private mux, never
// http.DefaultServeMux.
func AdminHandler(metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

package observability

import (
	"net/http"
	"net/http/pprof"
	"strings"
)

// AdminHandler returns the handler of the admin listener (EDGE_ADMIN_ADDR,
// loopback by default; never the public one): metrics at /metrics (nil: not
// served) and the net/http/pprof profiles under /debug/pprof/ (index,
// cmdline, profile, symbol, trace and the named profiles such as heap and
// goroutine). Everything else is 404. It uses a private mux, never
// http.DefaultServeMux.
//
// /debug/pprof/cmdline shows cmdline, not os.Args: the caller passes its
// command line with the secrets given as flags already redacted (a token
// or a shared secret must not be one GET away, even on loopback). nil
// shows an empty command line.
func AdminHandler(metrics http.Handler, cmdline []string) http.Handler {
	mux := http.NewServeMux()
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.Handle("/debug/pprof/cmdline", cmdlineHandler(cmdline))
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// cmdlineHandler answers as pprof.Cmdline does (the arguments separated by
// NUL bytes, as in /proc/self/cmdline), with args instead of os.Args.
func cmdlineHandler(args []string) http.Handler {
	body := []byte(strings.Join(args, "\x00"))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(body)
	})
}

package listener

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ServeAdmin serves h, an admin listener's handler (metrics, profiling), on
// ln (bound to addr) until ctx is done. Its requests may last a minute:
// /debug/pprof/profile streams for 30 s by default.
func ServeAdmin(ctx context.Context, ln net.Listener, addr string, h http.Handler, log *slog.Logger) error {
	return Serve(ctx, ServeConfig{
		Addr:           addr,
		Listener:       ln,
		Handler:        h,
		RequestTimeout: time.Minute,
		Logger:         log,
		OnListen:       func(a net.Addr) { log.Info("admin listening", "addr", a.String()) },
	})
}

package edge

import (
	"context"
	"net/http"
	"time"
)

// DefaultRequestTimeout is Config.RequestTimeout's default (operations.md
// EDGE_REQUEST_TIMEOUT).
const DefaultRequestTimeout = 10 * time.Second

// deadline gives each request one overall deadline, Config.RequestTimeout:
// PMS calls, their retries and waits for a shared cache load all run under
// it, and a request still waiting when it passes answers 504
// GATEWAY_TIMEOUT (failUpstream). Health is answered without waiting on
// anything, so the deadline costs it nothing.
func (s *server) deadline(next http.Handler) http.Handler {
	d := s.cfg.RequestTimeout
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

package edge

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// accessLog writes one line per request once it is answered. It never logs
// a key or any Authorization value: only the key's public id.
func (s *server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		next.ServeHTTP(w, r)
		st := stateFrom(r.Context())
		level := slog.LevelInfo
		if st.w.status >= 500 && st.w.status != statusClientClosed {
			level = slog.LevelError
		}
		if !s.log.Enabled(r.Context(), level) {
			return
		}
		attrs := make([]slog.Attr, 0, 12)
		attrs = append(attrs,
			slog.String("method", r.Method),
			slog.String("route", routePattern(r)),
			slog.Int("status", st.w.status),
			slog.Duration("duration", s.now().Sub(start)),
			slog.Int64("bytes", st.w.bytes),
			slog.String("request_id", st.requestID),
		)
		if st.code != "" {
			attrs = append(attrs, slog.String("code", string(st.code)))
		}
		if st.correlationID != "" {
			attrs = append(attrs, slog.String("correlation_id", st.correlationID))
		}
		if st.key != nil {
			attrs = append(attrs, slog.String("key_id", st.key.ID))
		}
		if st.cause != nil {
			attrs = append(attrs, slog.String("error", st.cause.Error()))
		}
		s.log.LogAttrs(r.Context(), level, "request", attrs...)
	})
}

// routePattern is the matched route template, or "unmatched": raw paths
// are partner input and must not become unbounded log or metric labels.
func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		if p := rc.RoutePattern(); p != "" {
			return p
		}
	}
	return "unmatched"
}

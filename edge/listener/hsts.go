package listener

import "net/http"

// hstsValue tells browsers and HTTP clients that honour it to use HTTPS
// only, for a year. includeSubDomains and preload are the domain owner's
// decision, not the edge's.
const hstsValue = "max-age=31536000"

// hsts sets Strict-Transport-Security on every answer sent over TLS. The
// header means nothing over plain HTTP (RFC 6797 section 7.2), so it is
// sent only when r.TLS is set.
func hsts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			w.Header().Set("Strict-Transport-Security", hstsValue)
		}
		next.ServeHTTP(w, r)
	})
}

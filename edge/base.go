package edge

import (
	"context"
	"crypto/rand"
	"net/http"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// withState is the outermost middleware: it gives the request its id, sets
// the headers every response carries (DECISIONS.md section 4) and echoes a
// valid Svc-Correlation-Id, before anything can fail.
func withState(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := &state{requestID: newRequestID()}
		st.correlationID, st.correlationOK = correlationID(r.Header)
		st.w.ResponseWriter = w
		h := w.Header()
		h["Svc-Request-Id"] = []string{st.requestID}
		h["Cache-Control"] = []string{"no-store"}
		h["X-Content-Type-Options"] = []string{"nosniff"}
		if st.correlationID != "" {
			h["Svc-Correlation-Id"] = []string{st.correlationID}
		}
		// A request that sent traceparent, valid or not, learns the trace
		// it was recorded under (DECISIONS.md section 4).
		if _, sent := r.Header["Traceparent"]; sent {
			if tp := observability.Traceparent(r.Context()); tp != "" {
				h["Traceparent"] = []string{tp}
			}
		}
		ctx := context.WithValue(r.Context(), stateKey{}, st)
		ctx = upstream.WithCallerIDs(ctx, upstream.CallerIDs{RequestID: st.requestID, CorrelationID: st.correlationID, Stats: &st.pms})
		next.ServeHTTP(&st.w, r.WithContext(ctx))
	})
}

// newRequestID returns req_ and 26 characters of base32 (A-Z, 2-7) from
// 130 random bits: opaque, unique, and within [A-Za-z0-9]{16,64}.
func newRequestID() string { return "req_" + rand.Text() }

// correlationID returns the caller's Svc-Correlation-Id and whether the
// header is acceptable: absent, or sent once matching
// ^[A-Za-z0-9._=+/-]{1,128}$. Only a valid id is returned.
func correlationID(h http.Header) (id string, ok bool) {
	vs := h["Svc-Correlation-Id"]
	switch {
	case len(vs) == 0:
		return "", true
	case len(vs) > 1 || !validCorrelationID(vs[0]):
		return "", false
	}
	return vs[0], true
}

func validCorrelationID(s string) bool {
	if len(s) < 1 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == '=', c == '+', c == '/', c == '-':
		default:
			return false
		}
	}
	return true
}

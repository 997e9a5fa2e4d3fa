package edge

import (
	"context"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/partner-edge/partner-edge/edge/internal/clientaddr"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
	"go.opentelemetry.io/otel/trace"
)

// withState is the outermost middleware, around the router: before anything
// can fail it starts the server span (when telemetry is on), gives the
// request its id and its one context (reqContext), sets the headers every
// response carries and echoes a valid Svc-Correlation-Id (docs/contract.md
// section 4). One context and one copy of the request, where a layer each
// (span, state, chi) made three copies and three links for every lookup.
func (s *server) withState(next http.Handler) http.Handler {
	d := s.cfg.RequestTimeout
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parent := r.Context()
		// /v1/health is a probe's, many times a minute: not traced
		// (docs/contract.md section 20).
		if s.tel != nil && r.URL.Path != healthPath {
			var span trace.Span
			parent, span = s.tel.StartServerSpan(r)
			defer span.End() // after the deferred stop below: the span covers the whole answer
		}
		st := &state{}
		st.requestID, st.traceIDs = requestIDs(parent)
		rctx, _ := s.routeCtxs.Get().(*chi.Context)
		if rctx == nil {
			rctx = chi.NewRouteContext()
		}
		rctx.Reset()
		rctx.Routes = s.mux
		st.route = rctx
		defer s.routeCtxs.Put(rctx) // once the request is answered, as chi does
		st.correlationID, st.correlationOK = correlationID(r.Header)
		st.callerIDs = upstream.CallerIDs{RequestID: st.requestID, CorrelationID: st.correlationID}
		st.w.ResponseWriter = w
		h := w.Header()
		st.idHeader[0] = st.requestID
		h["Svc-Request-Id"] = st.idHeader[:]
		h["Cache-Control"] = noStore
		h["X-Content-Type-Options"] = noSniff
		if st.correlationID != "" {
			h["Svc-Correlation-Id"] = r.Header["Svc-Correlation-Id"]
		}
		// A request that sent traceparent, valid or not, learns the trace
		// it was recorded under (docs/contract.md section 4).
		if _, sent := r.Header["Traceparent"]; sent {
			if tp := observability.Traceparent(parent); tp != "" {
				h["Traceparent"] = []string{tp}
			}
		}
		// The one clock read of the request's start: the access log's
		// start, the key expiry check, and the deadline (an injected
		// Config.Now is no base for a real timer).
		st.start = s.now()
		started := st.start
		if !s.realClock {
			started = time.Now()
		}
		st.ctx.init(parent, st, started.Add(d))
		defer st.ctx.cancel() // the deadline's timer: the request has been answered
		next.ServeHTTP(&st.w, r.WithContext(&st.ctx))
	})
}

// Header values every response shares. net/http only reads them; nothing
// in the edge modifies a header value in place.
var (
	noStore = []string{"no-store"}
	noSniff = []string{"nosniff"}
)

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// requestIDLen is the length of a request id: req_ and 24 characters.
const requestIDLen = 4 + 24

// requestIDs makes the request's id and, when ctx holds a span, the hex
// text of its trace and span ids (observability.AppendTraceIDs, for the
// access log): one string, one allocation, for the three.
func requestIDs(ctx context.Context) (id, traceIDs string) {
	var b [requestIDLen + observability.TraceIDsLen]byte
	appendRequestID(b[:0])
	n := requestIDLen
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		n += len(observability.AppendTraceIDs(b[n:n], sc))
	}
	ids := string(b[:n])
	return ids[:requestIDLen], ids[requestIDLen:]
}

// appendRequestID appends req_ and 24 characters of [A-Za-z0-9] (about 143
// bits) from the runtime's ChaCha8 generator: opaque and unique, at a
// fraction of crypto/rand's cost. Request ids are not secrets.
func appendRequestID(b []byte) []byte {
	b = append(b, "req_"...)
	for range 3 {
		x := rand.Uint64()
		for range 8 {
			b = append(b, idAlphabet[x%62])
			x /= 62
		}
	}
	return b
}

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
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '_', c == '=', c == '+', c == '/', c == '-':
		default:
			return false
		}
	}
	return true
}

// resolveClient records the request's client address in its state, before
// anything logs or limits by it.
func (s *server) resolveClient(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stateFrom(r.Context()).client = clientaddr.Resolve(r, s.cfg.TrustedProxies)
		next.ServeHTTP(w, r)
	})
}

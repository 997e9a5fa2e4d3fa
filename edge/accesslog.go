package edge

import (
	"cmp"
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/problem"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// accessLog records each request once it is answered (inside chi, where the
// matched route is known): its metrics, its server span's name and
// attributes, and one log line. It never records a key or any Authorization
// value: only the key's public id, for refusals too once identified.
func (s *server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if s.metrics != nil {
			s.metrics.RequestStarted(ctx, r.Method)
		}
		next.ServeHTTP(w, r)
		st := stateFrom(ctx)
		end := s.now()
		elapsed := end.Sub(st.start)
		route := routePattern(r)
		// The trace's tail decision (docs/observability.md, "Sampling"): a
		// 5xx or slow answer keeps a trace the head sampler dropped; sctx
		// then holds its server span, made again, for the duration's
		// exemplar, the span's attributes and the log line.
		sctx, kept, endSpan := s.tel.Decide(ctx, r, st.start, st.w.StatusCode, elapsed)
		if s.metrics != nil {
			s.metrics.RequestDone(sctx, r.Method, route, st.w.StatusCode, elapsed)
			if st.code != "" {
				s.metrics.Problem(ctx, string(st.code))
			}
		}
		s.annotateSpan(sctx, st, r.Method, route)
		endSpan(end)

		level := slog.LevelInfo
		if st.w.StatusCode >= 500 && st.w.StatusCode != statusClientClosed {
			level = slog.LevelError
		}
		log := s.cfg.AccessLog
		if log == nil {
			log = s.log
		}
		if !log.Enabled(ctx, level) || sampledOut(s.cfg.AccessLogSample, st.w.StatusCode) {
			return
		}
		var buf [17]slog.Attr
		attrs := append(buf[:0],
			slog.String("method", problem.Clip(r.Method, maxLoggedMethod)),
			slog.String("route", cmp.Or(route, "unmatched")),
			slog.Int("status", st.w.StatusCode),
			slog.Duration("duration", elapsed),
			slog.Int64("bytes", st.w.BodyBytes),
			slog.String("request_id", st.requestID),
		)
		if st.code != "" {
			attrs = append(attrs, slog.String("code", string(st.code)))
		}
		if st.correlationID != "" {
			attrs = append(attrs, slog.String("correlation_id", st.correlationID))
		}
		if st.keyID != "" {
			attrs = append(attrs, slog.String("key_id", st.keyID))
		}
		if st.authMethod != "" {
			attrs = append(attrs, slog.String("auth_method", st.authMethod))
		}
		attrs = append(attrs, slog.String("client_address", st.client.String()))
		// A plain hit is the common case and says nothing: the line names
		// the cache's outcome otherwise (miss, coalesced, stale).
		if kv, ok := st.cache.Attr(); ok && kv.Value.AsString() != cacheHit {
			attrs = append(attrs, slog.String("cache", kv.Value.AsString()))
		}
		// trace_sampled says whether the backend has the line's trace.
		if s.tel != nil {
			attrs = append(attrs, slog.Bool("trace_sampled", kept))
		}
		if st.cause != nil {
			attrs = append(attrs, slog.String("error", problem.Clip(st.cause.Error(), maxLoggedError)))
		}
		// trace_id, span_id and trace_flags, last, as observability's
		// TraceHandler adds them, from the ids' text the request made with
		// its id (one allocation for the three): the handler is then given
		// no span, so it adds none.
		if sc := trace.SpanContextFromContext(sctx); sc.IsValid() && st.traceIDs != "" {
			ta := observability.TraceAttrs(sc, st.traceIDs)
			attrs = append(attrs, ta[:]...)
		}
		// Handed to the handler directly, stamped with the end time already
		// read: LogAttrs would read the clock again and walk the stack for
		// a source location nobody logs.
		rec := slog.NewRecord(end, level, "request", 0)
		rec.AddAttrs(attrs...)
		_ = log.Handler().Handle(context.Background(), rec)
	})
}

// sampledOut reports whether a line is left out by Config.AccessLogSample:
// only successful answers are ever sampled.
func sampledOut(sample float64, status int) bool {
	return sample > 0 && sample < 1 && status < 400 && rand.Float64() >= sample
}

// Request fields written to the log are clipped (docs/contract.md section 10):
// a method is a token of a few letters, an error a sentence or two. The
// other fields are the edge's own (route template, ids) or validated
// before they are kept (correlation id).
const (
	maxLoggedMethod = 32
	maxLoggedError  = 512
)

// annotateSpan names the server span by route and adds what an SRE
// searches by: request id, correlation id, key id, problem code. (The
// cache sets its outcome, partner_edge.cache.outcome, on the span itself.)
func (s *server) annotateSpan(ctx context.Context, st *state, method, route string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	observability.SetRoute(ctx, method, route)
	var buf [9]attribute.KeyValue // one SetAttributes call (SetResponse's, which adds two): each call allocates
	attrs := append(buf[:0], observability.AttrRequestID.String(st.requestID),
		observability.AttrClientAddress.String(st.client.String()))
	if st.correlationID != "" {
		attrs = append(attrs, observability.AttrCorrelationID.String(st.correlationID))
	}
	if st.keyID != "" {
		attrs = append(attrs, observability.AttrKeyID.String(st.keyID))
	}
	if st.authMethod != "" {
		attrs = append(attrs, observability.AttrAuthMethod.String(st.authMethod))
	}
	if st.code != "" {
		attrs = append(attrs, observability.AttrProblemCode.String(string(st.code)))
	}
	if st.code != "" && st.w.StatusCode >= 500 {
		span.SetStatus(codes.Error, string(st.code))
	}
	// A partner who left got nothing written: the span records it as
	// net/http would send it (200); the access log says 499.
	status := st.w.StatusCode
	if status == statusClientClosed {
		status = 0
	}
	observability.SetResponse(ctx, status, st.w.BodyBytes, attrs...)
}

// cacheHit is the cache's outcome of a fresh answer (upstream/cache's
// OutcomeHit), which the access log leaves out.
const cacheHit = "hit"

// routePattern is the matched route template, or "" when no route matched:
// raw paths are partner input and must never become log or metric labels.
func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		return rc.RoutePattern()
	}
	return ""
}

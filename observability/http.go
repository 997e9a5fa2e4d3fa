package observability

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// AttrAttempt is the 1-based attempt number on a PMS client span (semconv's
// http.request.resend_count is set beside it from the second attempt on).
const AttrAttempt = attribute.Key("partner_edge.pms.attempt")

// Tracer returns the service's tracer (scope ScopeName), for the spans the
// service makes itself, such as the one span around a logical PMS call.
func (t *Telemetry) Tracer() trace.Tracer { return t.tp.Tracer(ScopeName) }

// Middleware returns the server-span middleware for the public listener:
// otelhttp around next, with the Telemetry's tracer provider. It continues a
// valid incoming traceparent (keeping tracestate) and starts a fresh trace for
// a missing or malformed one; it never rejects a request. It extracts W3C
// TraceContext only: a partner's baggage header is untrusted input and is not
// carried on to the PMS (Transport injects baggage the service itself puts in
// the context, with Propagator). The span is named by
// the method ("GET") until SetRoute names it by route template, and carries
// otelhttp's semantic-convention attributes (method, scheme, url.path,
// status code, client address, user agent, body sizes).
//
// otelhttp's own metrics are switched off: Metrics.RequestStarted and
// RequestDone record http.server.* with the route template, which otelhttp
// cannot see behind chi.
func (t *Telemetry) Middleware() func(http.Handler) http.Handler {
	opts := []otelhttp.Option{
		otelhttp.WithTracerProvider(t.tp),
		otelhttp.WithPropagators(propagation.TraceContext{}),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return spanMethod(r.Method) }),
	}
	return func(next http.Handler) http.Handler {
		return otelhttp.NewHandler(next, "", opts...)
	}
}

// SetRoute names the current server span "METHOD route" (for example
// "GET /v1/properties/{propertyId}") and sets http.route. Call it once the
// router has matched, with the route template (chi:
// chi.RouteContext(ctx).RoutePattern()), never the raw path. Unknown methods
// are named "HTTP", as semconv asks.
func SetRoute(ctx context.Context, method, route string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() || route == "" {
		return
	}
	span.SetName(spanMethod(method) + " " + route)
	span.SetAttributes(semconv.HTTPRoute(route))
}

func spanMethod(m string) string {
	if m = canonicalMethod(m); m == otherMethod {
		return "HTTP"
	}
	return m
}

// Transport returns base (nil: http.DefaultTransport) wrapped for PMS
// attempts: one client span per RoundTrip, a child of the span in the
// request's context, named by the method, with otelhttp's semantic-convention
// attributes; the attempt's traceparent, tracestate and the context's own
// baggage are injected into the request (Propagator).
//
// resendCount, when non-nil, reads from the request's context how many
// attempts came before this one (0 for the first; upstream.ResendCount fits):
// the span then carries AttrAttempt (resendCount+1) and, from the first
// retry on, http.request.resend_count. otelhttp's client metrics are off
// (PMSMetrics.Attempt records attempts by outcome).
func (t *Telemetry) Transport(base http.RoundTripper, resendCount func(context.Context) int) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if resendCount != nil {
		base = attemptTagger{base, resendCount}
	}
	return otelhttp.NewTransport(base,
		otelhttp.WithTracerProvider(t.tp),
		otelhttp.WithPropagators(t.prop),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return spanMethod(r.Method) }),
	)
}

// attemptTagger runs inside otelhttp's transport, where the request's context
// holds the attempt's client span, and labels it with the attempt number.
type attemptTagger struct {
	next        http.RoundTripper
	resendCount func(context.Context) int
}

func (a attemptTagger) RoundTrip(r *http.Request) (*http.Response, error) {
	n := a.resendCount(r.Context())
	span := trace.SpanFromContext(r.Context())
	if n > 0 {
		span.SetAttributes(AttrAttempt.Int(n+1), semconv.HTTPRequestResendCount(n))
	} else {
		span.SetAttributes(AttrAttempt.Int(1))
	}
	return a.next.RoundTrip(r)
}

package observability

import (
	"context"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// AttrAttempt is the 1-based attempt number on a PMS client span (semconv's
// http.request.resend_count is set beside it from the second attempt on).
const AttrAttempt = attribute.Key("partner_edge.pms.attempt")

// Tracer returns the service's tracer (scope ScopeName), for the spans the
// service makes itself, such as the one span around a logical PMS call.
func (t *Telemetry) Tracer() trace.Tracer { return t.tp.Tracer(ScopeName) }

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
// (upstream.PMSMetrics.Attempt records attempts by outcome).
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

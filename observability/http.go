package observability

import (
	"context"
	"maps"
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

// Transport returns base (nil: http.DefaultTransport) wrapped for PMS
// attempts: one client span per RoundTrip (otelhttp's, named by the
// method), a child of the span in the request's context; the attempt's
// traceparent, tracestate and the context's own baggage are injected.
// resendCount, when non-nil, reads from the request's context how many
// attempts came before this one (upstream.ResendCount): the span then
// carries AttrAttempt and, from the first retry on,
// http.request.resend_count. otelhttp's client metrics are off
// (upstream.PMSMetrics.Attempt records attempts by outcome).
func (t *Telemetry) Transport(base http.RoundTripper, resendCount func(context.Context) int) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if resendCount != nil {
		base = attemptTagger{base, resendCount}
	}
	traced := otelhttp.NewTransport(base,
		otelhttp.WithTracerProvider(t.tp),
		otelhttp.WithPropagators(t.prop),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return spanMethod(r.Method) }),
	)
	return clientTransport{traced: traced, base: base, prop: t.prop}
}

// clientTransport sends an attempt through otelhttp when the request's
// span records, and around it when the span does not (a trace sampled
// out without tail decisions, Config.TailSampling; with them, the spans
// under a request record until it is answered): otelhttp would start a
// span nobody records and compute its attributes and metric options all
// the same, about 5% of a PMS call's CPU. The PMS still gets the
// traceparent (with the caller's span id: no span of the attempt exists to
// name), tracestate and baggage, so its own logs join the trace.
type clientTransport struct {
	traced http.RoundTripper // otelhttp's
	base   http.RoundTripper
	prop   propagation.TextMapPropagator
}

func (c clientTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx := r.Context()
	if trace.SpanFromContext(ctx).IsRecording() {
		return c.traced.RoundTrip(r)
	}
	// A RoundTripper leaves its request as it was given: a shallow copy
	// with a header map of its own. The values are shared, not cloned
	// (Request.Clone would copy each): Inject replaces a value, never
	// changes one in place, and the transport only reads them.
	h := make(http.Header, len(r.Header)+3)
	maps.Copy(h, r.Header)
	r2 := *r
	r2.Header = h
	c.prop.Inject(ctx, propagation.HeaderCarrier(h))
	return c.base.RoundTrip(&r2)
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

package observability

import (
	"context"
	"maps"
	"net"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
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
// trace context is injected in the formats OTEL_PROPAGATORS names
// (traceparent and tracestate by default; the context's own baggage
// when asked).
// resendCount, when non-nil, reads from the request's context how many
// attempts came before this one (upstream/pms.ResendCount): the span then
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

// Middleware returns the server-span middleware (pmsim's; the edge calls
// StartServerSpan itself): one span of kind Server per request, made with
// the Telemetry's tracer provider (scope ScopeName).
//
// It continues a valid incoming traceparent (keeping tracestate), else
// starts a fresh trace; it never rejects a request. It extracts W3C
// TraceContext only: a partner's baggage is untrusted and not carried on to
// the PMS. The span is named by the method ("HTTP" for a method outside RFC
// 9110) until SetRoute names it.
//
// A sampled-out request costs the span's start, its context and one request
// copy: no attribute is computed and w is not wrapped (Traceparent still
// reports its ids, flags 00). A recording span carries the HTTP server
// semantic conventions (requestAttrs) and the answer's (SetResponse), seen
// through a StatusRecorder around w. The request body is not wrapped, so
// http.request.body.size is not set. No http.server.* metric is recorded
// here: Metrics.RequestDone does, with the route template.
func (t *Telemetry) Middleware() func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, span := t.startServerSpan(r)
			defer span.End()
			if !span.IsRecording() {
				next.ServeHTTP(w, r.WithContext(ctx))
				return
			}
			// One allocation for the recorder and the span's attributes.
			sw := &struct {
				StatusRecorder
				kv [maxRequestAttrs]attribute.KeyValue
			}{StatusRecorder: StatusRecorder{ResponseWriter: w}}
			span.SetAttributes(requestAttrs(sw.kv[:0], r)...)
			next.ServeHTTP(sw, r.WithContext(ctx))
			endSpan(span, sw.kv[:0], sw.StatusCode, sw.BodyBytes)
		})
	}
}

var serverSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// StartServerSpan starts r's server span as Middleware does, for a caller
// that builds the request's context itself (the edge makes one context per
// request, not one per layer). The caller ends the span, and sets the
// answer's attributes with SetRoute and SetResponse. The returned context
// is r's with the span in it.
func (t *Telemetry) StartServerSpan(r *http.Request) (context.Context, trace.Span) {
	ctx, span := t.startServerSpan(r)
	if span.IsRecording() {
		var kv [maxRequestAttrs]attribute.KeyValue
		span.SetAttributes(requestAttrs(kv[:0], r)...)
	}
	return ctx, span
}

// startServerSpan is StartServerSpan without the request's attributes.
func (t *Telemetry) startServerSpan(r *http.Request) (context.Context, trace.Span) {
	ctx := r.Context()
	if _, sent := r.Header["Traceparent"]; sent {
		ctx = propagation.TraceContext{}.Extract(ctx, traceHeaders{propagation.HeaderCarrier(r.Header)})
	}
	return t.serverTracer.Start(ctx, spanMethod(r.Method), serverSpan...)
}

// AttrClientAddress is the semconv client.address: Middleware sets it to the
// TCP peer; the edge sets it to the client address it resolved (trusted
// proxies' X-Forwarded-For), which then wins.
const AttrClientAddress = semconv.ClientAddressKey

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

// traceHeaders reads the W3C TraceContext fields of a request without
// propagation.HeaderCarrier's canonicalisation of the lower-case field names
// (two allocations per request). TraceContext.Extract only calls Get.
type traceHeaders struct{ propagation.HeaderCarrier }

func (h traceHeaders) Get(key string) string {
	switch key {
	case "traceparent":
		key = "Traceparent"
	case "tracestate":
		key = "Tracestate"
	default:
		return h.HeaderCarrier.Get(key)
	}
	if v := h.HeaderCarrier[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// maxRequestAttrs bounds what requestAttrs appends.
const maxRequestAttrs = 12

// SetResponse records the answer of the request of ctx on its server span
// (StartServerSpan): status is the status written (0: nothing was written,
// which net/http sends as 200), bytes the body's size. It sets attrs (the
// caller's own, in the same call: each SetAttributes call allocates),
// http.response.status_code, http.response.body.size and, for a 5xx, the
// span's error status. Without a recording span it does nothing.
func SetResponse(ctx context.Context, status int, bytes int64, attrs ...attribute.KeyValue) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	endSpan(span, attrs, status, bytes)
}

func endSpan(span trace.Span, kv []attribute.KeyValue, status int, bytes int64) {
	if status == 0 {
		status = http.StatusOK // what net/http sends for a handler that wrote nothing
	}
	kv = append(kv, semconv.HTTPResponseStatusCode(status))
	if bytes > 0 {
		kv = append(kv, semconv.HTTPResponseBodySize(int(bytes)))
	}
	span.SetAttributes(kv...)
	switch {
	case status < 100 || status >= 600:
		span.SetStatus(codes.Error, "invalid HTTP status code "+strconv.Itoa(status))
	case status >= 500:
		span.SetStatus(codes.Error, "")
	}
}

// requestAttrs appends the request's semantic-convention attributes to kv
// (at most maxRequestAttrs). It allocates nothing beyond what kv holds.
func requestAttrs(kv []attribute.KeyValue, r *http.Request) []attribute.KeyValue {
	if m := canonicalMethod(r.Method); m != otherMethod {
		kv = append(kv, semconv.HTTPRequestMethodKey.String(m))
	} else {
		kv = append(kv, semconv.HTTPRequestMethodOther)
		if r.Method != "" {
			kv = append(kv, semconv.HTTPRequestMethodOriginal(r.Method))
		}
	}
	scheme, defaultPort := "http", 80
	if r.TLS != nil {
		scheme, defaultPort = "https", 443
	}
	kv = append(kv, semconv.URLScheme(scheme))
	if r.URL != nil && r.URL.Path != "" {
		kv = append(kv, semconv.URLPath(r.URL.Path))
	}
	if host, port := splitHostPort(r.Host); host != "" {
		kv = append(kv, semconv.ServerAddress(host))
		if port > 0 && port != defaultPort {
			kv = append(kv, semconv.ServerPort(port))
		}
	}
	// client.address is the peer: X-Forwarded-For is not read here (anyone
	// can send it); the edge, which knows the trusted proxies, sets
	// AttrClientAddress again.
	if peer, peerPort := splitHostPort(r.RemoteAddr); peer != "" {
		kv = append(kv, semconv.NetworkPeerAddress(peer))
		if peerPort > 0 {
			kv = append(kv, semconv.NetworkPeerPort(peerPort))
		}
		kv = append(kv, semconv.ClientAddress(peer))
	}
	if _, v, ok := strings.Cut(r.Proto, "/"); ok && v != "" {
		kv = append(kv, semconv.NetworkProtocolVersion(v))
	}
	if ua := r.UserAgent(); ua != "" {
		kv = append(kv, semconv.UserAgentOriginal(ua))
	}
	return kv
}

// splitHostPort splits "host:port", "[v6]:port", "host" or "[v6]"; port is
// -1 when absent or not a number.
func splitHostPort(hostport string) (host string, port int) {
	if !strings.HasPrefix(hostport, "[") && !strings.Contains(hostport, ":") {
		return hostport, -1
	}
	host, p, err := net.SplitHostPort(hostport)
	if err != nil { // "[v6]" alone, or malformed
		if end := strings.LastIndexByte(hostport, ']'); end > 0 && !strings.HasPrefix(hostport[end+1:], ":") {
			return hostport[1:end], -1
		}
		return "", -1
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return host, -1
	}
	return host, int(n)
}

// StatusRecorder is the module's one status-recording ResponseWriter: it
// passes everything through and remembers the final status and the body's
// size, for the server span (Middleware) and for the edge's request
// state (access log, metrics, recovery). Embed it; the zero value with
// ResponseWriter set is ready.
type StatusRecorder struct {
	http.ResponseWriter
	// StatusCode is the final status written: 0 until a header or body is
	// written; interim 1xx answers (but 101) are passed on, not recorded.
	StatusCode int
	// BodyBytes counts the body bytes the underlying writer accepted.
	BodyBytes int64
}

// WriteHeader records the first final status and passes code on.
func (sw *StatusRecorder) WriteHeader(code int) {
	if sw.StatusCode == 0 && (code < 100 || code > 199 || code == http.StatusSwitchingProtocols) {
		sw.StatusCode = code
	}
	sw.ResponseWriter.WriteHeader(code)
}

// Write records 200 when no status was written, and counts the bytes.
func (sw *StatusRecorder) Write(b []byte) (int, error) {
	if sw.StatusCode == 0 {
		sw.StatusCode = http.StatusOK
	}
	n, err := sw.ResponseWriter.Write(b)
	sw.BodyBytes += int64(n)
	return n, err
}

// Flush flushes the underlying writer when it can (as net/http's does): a
// flush sends the header, so 200 is recorded when no status was written.
func (sw *StatusRecorder) Flush() {
	if sw.StatusCode == 0 {
		sw.StatusCode = http.StatusOK
	}
	_ = http.NewResponseController(sw.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (sw *StatusRecorder) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

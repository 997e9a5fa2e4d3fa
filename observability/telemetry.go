package observability

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/contrib/propagators/autoprop"
	"go.opentelemetry.io/otel/attribute"
	promexporter "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// DefaultServiceName is service.name when neither Config.ServiceName,
// OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one.
const DefaultServiceName = "partner-edge"

// Config configures New. The zero value is usable: no environment, so nothing
// is exported, and /metrics still serves every instrument.
type Config struct {
	// ServiceName is the resource's service.name, whatever the
	// environment says (a program that is not the edge: the simulator).
	// Empty: OTEL_SERVICE_NAME, else service.name in
	// OTEL_RESOURCE_ATTRIBUTES, else DefaultServiceName.
	ServiceName string

	// Version is the resource's service.version unless
	// OTEL_RESOURCE_ATTRIBUTES names one. Empty: ModuleVersion, else
	// "unknown".
	Version string

	// Getenv reads the OTEL_* variables New decides on (nil: an empty
	// environment). The exporters themselves (autoexport, OTLP) read their
	// details (endpoint, protocol, headers, TLS) with os.Getenv, as every
	// OTLP exporter does: run passes os.Getenv so both agree.
	Getenv func(string) string

	// SpanExporter, when non-nil, receives every sampled span synchronously
	// as it ends, whatever OTEL_TRACES_EXPORTER says (tests:
	// tracetest.InMemoryExporter). Nil: from the environment, in batches.
	SpanExporter sdktrace.SpanExporter

	// MetricReader, when non-nil, is an extra reader beside the Prometheus
	// one, whatever OTEL_METRICS_EXPORTER says (tests:
	// sdkmetric.NewManualReader()). Nil: from the environment.
	MetricReader sdkmetric.Reader

	// Brand is the resource attribute partner_edge.brand; empty: not set.
	Brand string

	// TailSampling keeps, whatever the head sampler (OTEL_TRACES_SAMPLER)
	// decided, the whole trace of a request answered 5xx or slower than
	// KeepSlowerThan (tail.go; Decide). It needs an exporter: without one
	// it is off.
	TailSampling bool
	// KeepSlowerThan is the time from which a request's trace is kept
	// (EDGE_TRACE_SLOW); 0: no request is kept for its time.
	KeepSlowerThan time.Duration
	// KeepRate bounds the traces kept by their outcome (5xx first, then
	// slow) to that many a second, with as many at once
	// (EDGE_TRACE_KEEP_RATE; tail.go); the others are counted in
	// partner_edge.traces.unkept. 0: no bound.
	KeepRate int
}

// Telemetry holds the providers, the propagator, the instruments and the
// Prometheus registry of one process. Build it with New; end it with Shutdown.
type Telemetry struct {
	tp           trace.TracerProvider
	serverTracer trace.Tracer // tp's tracer of ScopeName, made once
	mp           metric.MeterProvider
	prop         propagation.TextMapPropagator
	metrics      *Metrics
	registry     *prometheus.Registry
	exporter     string
	mu           sync.Mutex // guards shutdowns
	shutdowns    []func(context.Context) error
	tail         *tailProcessor // nil: no tail decisions (Decide keeps what the head sampler kept)
	slow         time.Duration
	// loss counts what telemetry loses: traces the keep rate left out,
	// spans the exporter's queue or the export dropped (loss.go).
	loss *loss
}

// New builds the telemetry of the process from cfg and the standard OTEL_*
// variables, read through Config.Getenv (docs/observability.md, "Traces"
// and "Metrics"). Spans and metrics leave the process only when an exporter
// is configured (exporterName); /metrics (MetricsHandler) always serves
// every instrument. OTEL_SDK_DISABLED=true gives no-op providers: nothing
// recorded, nothing exported; propagation still works and /metrics serves
// an empty page. A malformed setting (unknown sampler, bad ratio, unknown
// exporter or protocol) is an error naming the variable.
func New(ctx context.Context, cfg Config) (*Telemetry, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	prop, err := propagatorFromEnv(getenv)
	if err != nil {
		return nil, err
	}
	t := &Telemetry{
		prop:     prop,
		registry: prometheus.NewRegistry(),
		slow:     cfg.KeepSlowerThan,
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		t.tp, t.mp, t.exporter = tracenoop.NewTracerProvider(), metricnoop.NewMeterProvider(), "disabled"
	} else if err := t.start(ctx, cfg, getenv); err != nil {
		return nil, err
	}
	t.serverTracer = t.tp.Tracer(ScopeName)
	if t.metrics, err = newMetrics(t.mp); err != nil {
		return nil, errors.Join(err, t.Shutdown(ctx))
	}
	return t, nil
}

// start makes the SDK's providers: metrics first, so that the tracer's
// loss counters (loss.go) are instruments of the meter.
func (t *Telemetry) start(ctx context.Context, cfg Config, getenv func(string) string) error {
	res, err := newResource(cfg, getenv)
	if err != nil {
		return err
	}
	mp, err := newMeterProvider(ctx, cfg, getenv, res, t.registry)
	if err != nil {
		return err
	}
	if t.loss, err = newLoss(mp.Meter(ScopeName)); err != nil {
		return errors.Join(err, mp.Shutdown(ctx))
	}
	tp, exporter, err := newTracerProvider(ctx, cfg, getenv, res, t)
	if err != nil {
		return errors.Join(err, mp.Shutdown(ctx))
	}
	t.tp, t.exporter, t.mp = tp, exporter, mp
	t.shutdowns = []func(context.Context) error{tp.Shutdown, mp.Shutdown}
	return nil
}

// TracerProvider returns the provider spans are made with.
func (t *Telemetry) TracerProvider() trace.TracerProvider { return t.tp }

// MeterProvider returns the provider instruments are made with.
func (t *Telemetry) MeterProvider() metric.MeterProvider { return t.mp }

// Meter returns the service's meter (scope ScopeName), on which the other
// packages make the instruments of their own vocabularies
// (upstream.NewPMSMetrics, cache.NewMetrics, upstream.NewRejectionMetrics).
func (t *Telemetry) Meter() metric.Meter { return t.mp.Meter(ScopeName) }

// Metrics returns the service's instruments (created once by New).
func (t *Telemetry) Metrics() *Metrics { return t.metrics }

// TracesExporter names where spans go, for the start-up log line: "none"
// (nothing configured, or OTEL_TRACES_EXPORTER=none), "otlp", "console",
// another autoexport name, "custom" (Config.SpanExporter) or "disabled"
// (OTEL_SDK_DISABLED).
func (t *Telemetry) TracesExporter() string { return t.exporter }

// Shutdown flushes pending spans and metrics to their exporters and stops
// them. Bound it with ctx. Later calls do nothing and return nil.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	for _, f := range t.shutdowns {
		errs = append(errs, f(ctx))
	}
	t.shutdowns = nil
	return errors.Join(errs...)
}

// MetricsHandler serves the Prometheus text exposition of every instrument,
// from the Telemetry's private registry (never the global default one), or
// OpenMetrics to a scraper that asks for it (Accept:
// application/openmetrics-text): only OpenMetrics carries exemplars, the
// trace_id of a kept request on the request-duration histogram
// (docs/contract.md section 20).
func (t *Telemetry) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(t.registry, promhttp.HandlerOpts{Registry: t.registry, EnableOpenMetrics: true})
}

// newResource is the resource of every span and metric, as the
// OpenTelemetry specification orders its sources: OTEL_SERVICE_NAME over
// service.name in OTEL_RESOURCE_ATTRIBUTES over the default
// (DefaultServiceName); OTEL_RESOURCE_ATTRIBUTES over the defaults of the
// other attributes (service.version from the build, service.instance.id
// from the host). Config.ServiceName, a program's own name, wins over all.
func newResource(cfg Config, getenv func(string) string) (*resource.Resource, error) {
	env, err := parseResourceAttributes(getenv("OTEL_RESOURCE_ATTRIBUTES"))
	if err != nil {
		return nil, err
	}
	// service.instance.id tells instances apart: the host name and the
	// process id by default (a pod's name is its host name), which
	// OTEL_RESOURCE_ATTRIBUTES overrides, as the manifest does with the
	// pod's name. Later values of a key win (resource.NewWithAttributes).
	attrs := []attribute.KeyValue{
		semconv.ServiceName(DefaultServiceName),
		semconv.ServiceVersion(cmp.Or(cfg.Version, ModuleVersion(), "unknown")),
		semconv.ServiceInstanceID(defaultInstanceID()),
	}
	if cfg.Brand != "" {
		attrs = append(attrs, AttrBrand.String(cfg.Brand))
	}
	attrs = append(attrs, env...)
	if name := cmp.Or(cfg.ServiceName, strings.TrimSpace(getenv("OTEL_SERVICE_NAME"))); name != "" {
		attrs = append(attrs, semconv.ServiceName(name))
	}
	// The SDK's own description is the SDK's to say.
	attrs = append(attrs,
		semconv.TelemetrySDKLanguageGo,
		semconv.TelemetrySDKName("opentelemetry"),
		semconv.TelemetrySDKVersion(sdk.Version()),
	)
	return resource.NewWithAttributes(semconv.SchemaURL, attrs...), nil
}

// AttrBrand is the resource attribute naming the brand an edge serves
// (EDGE_BRAND).
const AttrBrand = attribute.Key("partner_edge.brand")

// defaultInstanceID is "<host name>-<pid>".
func defaultInstanceID() string {
	host, _ := os.Hostname() // "" when it fails
	return cmp.Or(host, "unknown") + "-" + strconv.Itoa(os.Getpid())
}

// parseResourceAttributes reads OTEL_RESOURCE_ATTRIBUTES: key=value pairs,
// comma-separated, values percent-encoded.
func parseResourceAttributes(s string) ([]attribute.KeyValue, error) {
	var out []attribute.KeyValue
	for pair := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %q is not key=value", pair)
		}
		val, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: bad value for %q", k)
		}
		out = append(out, attribute.String(k, val))
	}
	return out, nil
}

// ModuleVersion is the main module's version from the build info; "" for
// a development build ("(devel)") or without build info.
func ModuleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return ""
}

// newMeterProvider builds the SDK meter provider: the runtime collectors
// and the Prometheus reader on reg, plus cfg.MetricReader or an OTLP/console reader when the environment
// asks for one.
func newMeterProvider(ctx context.Context, cfg Config, getenv func(string) string, res *resource.Resource, reg *prometheus.Registry) (*sdkmetric.MeterProvider, error) {
	// client_golang's Go and process collectors, under the names every
	// Prometheus dashboard and alert already knows (docs/contract.md section
	// 18; docs/observability.md, "Metrics"), not OTel's runtime
	// instrumentation's. They are read at scrape time.
	if err := errors.Join(reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		reg.Register(collectors.NewGoCollector())); err != nil {
		return nil, fmt.Errorf("runtime metrics: %w", err)
	}
	// WithoutScopeInfo: every instrument has a unique name, so the scope
	// labels told nothing, and two of the three were always empty
	// (otel_scope_version, otel_scope_schema_url): docs/contract.md section 18.
	prom, err := promexporter.New(promexporter.WithRegisterer(reg), promexporter.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	opts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(prom)}
	if cfg.MetricReader != nil {
		opts = append(opts, sdkmetric.WithReader(cfg.MetricReader))
	} else if name := exporterName(getenv, "METRICS"); name != "none" && name != "prometheus" {
		// prometheus: autoexport would start a second HTTP server; /metrics
		// on the admin listener already serves it.
		r, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTEL_METRICS_EXPORTER=%q: %w", name, err)
		}
		if !autoexport.IsNoneMetricReader(r) {
			opts = append(opts, sdkmetric.WithReader(r))
		}
	}
	return sdkmetric.NewMeterProvider(opts...), nil
}

// AdminHandler returns the handler of the admin listener (EDGE_ADMIN_ADDR,
// loopback by default; never the public one): metrics at /metrics (nil: not
// served) and the net/http/pprof profiles under /debug/pprof/ (index,
// cmdline, profile, symbol, trace and the named profiles such as heap and
// goroutine). Everything else is 404. It uses a private mux, never
// http.DefaultServeMux.
//
// /debug/pprof/cmdline shows cmdline, not os.Args: the caller passes its
// command line with the secrets given as flags already redacted (a token
// or a shared secret must not be one GET away, even on loopback). nil
// shows an empty command line.
func AdminHandler(metrics http.Handler, cmdline []string) http.Handler {
	mux := http.NewServeMux()
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.Handle("/debug/pprof/cmdline", cmdlineHandler(cmdline))
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// cmdlineHandler answers as pprof.Cmdline does (the arguments separated by
// NUL bytes, as in /proc/self/cmdline), with args instead of os.Args.
func cmdlineHandler(args []string) http.Handler {
	body := []byte(strings.Join(args, "\x00"))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write(body)
	})
}

// Span attribute keys of the service's own (non-semconv) data. The edge sets
// them on the server span, upstream on the PMS spans, so an SRE can search a
// trace backend by any id a partner quotes.
const (
	// AttrRequestID is the Svc-Request-Id (req_...) of the partner request.
	AttrRequestID = attribute.Key("partner_edge.request_id")
	// AttrCorrelationID is the partner's valid Svc-Correlation-Id.
	AttrCorrelationID = attribute.Key("partner_edge.correlation_id")
	// AttrKeyID is the public id of the API key (key_...), never the key.
	AttrKeyID = attribute.Key("partner_edge.key_id")
	// AttrAuthMethod is how the request authenticated: api_key or oauth
	// (docs/contract.md section 12).
	AttrAuthMethod = attribute.Key("partner_edge.auth.method")
	// AttrProblemCode is the problem code of an error response.
	AttrProblemCode = attribute.Key("partner_edge.problem.code")
)

// newTracerProvider builds the SDK provider and names its exporter; it
// sets t.tail when the provider decides tails (Config.TailSampling).
func newTracerProvider(ctx context.Context, cfg Config, getenv func(string) string, res *resource.Resource, t *Telemetry) (*sdktrace.TracerProvider, string, error) {
	sampler, err := samplerFromEnv(getenv)
	if err != nil {
		return nil, "", err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}

	var proc sdktrace.SpanProcessor
	name := "custom"
	if cfg.SpanExporter != nil {
		proc = sdktrace.NewSimpleSpanProcessor(cfg.SpanExporter)
	} else if name = exporterName(getenv, "TRACES"); name != "none" {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("OTEL_TRACES_EXPORTER=%q: %w", name, err)
		}
		if autoexport.IsNoneSpanExporter(exp) {
			name = "none"
		} else if proc, err = newCountingBatcher(exp, getenv, t.loss); err != nil {
			return nil, "", err
		}
	}
	// Tail decisions only where spans go somewhere: with no exporter, a
	// request's children need not record for a decision nobody reads.
	if cfg.TailSampling && proc != nil {
		t.tail = &tailProcessor{next: proc, held: make(map[trace.TraceID]*pendingTrace),
			budget: newKeepBudget(cfg.KeepRate, time.Now), loss: t.loss, now: time.Now}
		proc = t.tail
		sampler = tailSampler{head: sampler}
		opts = append(opts, sdktrace.WithIDGenerator(tailIDs{}))
	}
	opts = append(opts, sdktrace.WithSampler(sampler))
	if proc != nil {
		opts = append(opts, sdktrace.WithSpanProcessor(proc))
	}
	return sdktrace.NewTracerProvider(opts...), name, nil
}

// propagatorFromEnv reads OTEL_PROPAGATORS, comma-separated names
// (tracecontext, baggage, b3, b3multi, jaeger, xray, ottrace, none: the
// contrib autoprop registry): the formats the trace context goes to the
// PMS in. Unset: tracecontext alone (the edge sets no baggage of its own,
// and a partner's is not passed on). An unknown name is an error naming
// the variable. What a partner sends is read as W3C traceparent whatever
// this says (docs/contract.md section 4).
func propagatorFromEnv(getenv func(string) string) (propagation.TextMapPropagator, error) {
	v := strings.TrimSpace(getenv("OTEL_PROPAGATORS"))
	if v == "" {
		return propagation.TraceContext{}, nil
	}
	var names []string
	for n := range strings.SplitSeq(v, ",") {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return propagation.TraceContext{}, nil
	}
	p, err := autoprop.TextMapPropagator(names...)
	if err != nil {
		return nil, fmt.Errorf("OTEL_PROPAGATORS=%q: %w", v, err)
	}
	return p, nil
}

// exporterName applies the rule "nothing exported when no exporter is
// configured" to signal (TRACES, METRICS): OTEL_<signal>_EXPORTER when set,
// else otlp if an OTLP endpoint variable is set, else none.
func exporterName(getenv func(string) string, signal string) string {
	if v := strings.TrimSpace(getenv("OTEL_" + signal + "_EXPORTER")); v != "" {
		return v
	}
	if strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) != "" ||
		strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT")) != "" {
		return "otlp"
	}
	return "none"
}

// samplerFromEnv mirrors the SDK's own reading of OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG, but through getenv, and rejects bad values instead
// of falling back silently. Unset: parentbased_always_on.
func samplerFromEnv(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	base, parent := strings.CutPrefix(name, "parentbased_")
	if name == "" {
		base, parent = "always_on", true
	}
	var s sdktrace.Sampler
	switch base {
	case "always_on":
		s = sdktrace.AlwaysSample()
	case "always_off":
		s = sdktrace.NeverSample()
	case "traceidratio":
		r := 1.0
		if arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG")); arg != "" {
			v, err := strconv.ParseFloat(arg, 64)
			if err != nil || v < 0 || v > 1 {
				return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1", arg)
			}
			r = v
		}
		s = sdktrace.TraceIDRatioBased(r)
	default:
		return nil, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: unsupported sampler", name)
	}
	if parent {
		s = sdktrace.ParentBased(s)
	}
	return s, nil
}

// Traceparent formats the span context of ctx as a W3C traceparent value,
// "00-<trace id>-<span id>-<flags>", for the Traceparent response header
// (docs/contract.md section 4). It is "" when ctx holds no valid span context.
// Call it with the server span's context (inside Middleware).
func Traceparent(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	var b [55]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b[0:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	flags := [1]byte{byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))}
	hex.Encode(b[53:55], flags[:])
	return string(b[:])
}

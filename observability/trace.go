package observability

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

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

// newTracerProvider builds the SDK provider and names its exporter.
func newTracerProvider(ctx context.Context, cfg Config, getenv func(string) string, res *resource.Resource, tailOut **tailProcessor) (*sdktrace.TracerProvider, string, error) {
	sampler, err := samplerFromEnv(getenv)
	if err != nil {
		return nil, "", err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}

	var proc sdktrace.SpanProcessor
	name := "custom"
	switch {
	case cfg.SpanExporter != nil:
		proc = sdktrace.NewSimpleSpanProcessor(cfg.SpanExporter)
	default:
		name = tracesExporterName(getenv)
		if name == "none" {
			break
		}
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("OTEL_TRACES_EXPORTER=%q: %w", name, err)
		}
		if autoexport.IsNoneSpanExporter(exp) {
			name = "none"
			break
		}
		proc = sdktrace.NewBatchSpanProcessor(exp)
	}
	// Tail decisions only where spans go somewhere: with no exporter, a
	// request's children need not record for a decision nobody reads.
	if cfg.TailSampling && proc != nil {
		tail := newTailProcessor(proc)
		*tailOut = tail
		proc = tail
		sampler = tailSampler{head: sampler}
		opts = append(opts, sdktrace.WithIDGenerator(tailIDs{}))
	}
	opts = append(opts, sdktrace.WithSampler(sampler))
	if proc != nil {
		opts = append(opts, sdktrace.WithSpanProcessor(proc))
	}
	return sdktrace.NewTracerProvider(opts...), name, nil
}

// tracesExporterName applies the rule "nothing exported when no exporter is
// configured": OTEL_TRACES_EXPORTER when set, else otlp if an OTLP endpoint
// variable is set, else none.
func tracesExporterName(getenv func(string) string) string {
	if v := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); v != "" {
		return v
	}
	if otlpEndpointSet(getenv, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
		return "otlp"
	}
	return "none"
}

func otlpEndpointSet(getenv func(string) string, signalKey string) bool {
	return strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")) != "" ||
		strings.TrimSpace(getenv(signalKey)) != ""
}

// samplerFromEnv mirrors the SDK's own reading of OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG, but through getenv, and rejects bad values instead
// of falling back silently. Unset: parentbased_always_on.
func samplerFromEnv(getenv func(string) string) (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")))
	arg := strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG"))
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		v, err := strconv.ParseFloat(arg, 64)
		if err != nil || v < 0 || v > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1", arg)
		}
		return v, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.TraceIDRatioBased(r), nil
	case "parentbased_traceidratio":
		r, err := ratio()
		if err != nil {
			return nil, err
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: unsupported sampler", name)
	}
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

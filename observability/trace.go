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
		name = exporterName(getenv, "TRACES")
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
		*tailOut = &tailProcessor{next: proc, held: make(map[trace.TraceID]*pendingTrace)}
		proc = *tailOut
		sampler = tailSampler{head: sampler}
		opts = append(opts, sdktrace.WithIDGenerator(tailIDs{}))
	}
	opts = append(opts, sdktrace.WithSampler(sampler))
	if proc != nil {
		opts = append(opts, sdktrace.WithSpanProcessor(proc))
	}
	return sdktrace.NewTracerProvider(opts...), name, nil
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

package observability

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/trace"
)

// Redacted replaces a secret in a log line.
const Redacted = "[REDACTED]"

// Log attribute keys written by TraceHandler.
const (
	LogTraceID = "trace_id"
	LogSpanID  = "span_id"
	// LogTraceFlags is the W3C trace flags of the span when the line was
	// written, two hex digits: "01" once the trace is being kept, "00"
	// before (the access line's trace_sampled has the last word: a 5xx or
	// slow request is kept after its other lines were written).
	LogTraceFlags = "trace_flags"
)

// NewLogger returns a logger writing to w: JSON lines for format "json" (and
// for any value other than "text"), logfmt-style text for "text", at level
// and above. Records carry trace_id and span_id when their context holds a
// span (use the *Context logging methods), with trace_flags, and pass through Redact with
// secrets (for example the PMS token): see Redact for what is hidden.
//
// Run should validate the format setting itself; NewLogger never fails.
func NewLogger(w io.Writer, format string, level slog.Level, secrets ...string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: Redact(secrets...)}
	if strings.EqualFold(format, "text") {
		return slog.New(TraceHandler(slog.NewTextHandler(w, opts)))
	}
	// log/slog's own JSONHandler: a hand-written encoder of the same bytes
	// saved under 10% of a cached answer as deployed (docs/architecture.md,
	// "What we own").
	return slog.New(TraceHandler(slog.NewJSONHandler(w, opts)))
}

// sensitiveKeys are attribute keys whose values are always hidden, compared
// case-insensitively. key_id (a key's public id) is not among them.
var sensitiveKeys = []string{"authorization", "token", "key", "api_key", "pms_token"}

func sensitive(k string) bool {
	if len(k) < 3 || len(k) > len("authorization") { // none so short or long
		return false
	}
	switch k { // the usual spelling, without EqualFold's loop (hot: every attribute of every line)
	case "authorization", "token", "key", "api_key", "pms_token":
		return true
	}
	if lowerASCII(k) {
		return false // no other spelling of a lower-case key matches
	}
	return slices.ContainsFunc(sensitiveKeys, func(s string) bool { return strings.EqualFold(k, s) })
}

// minSecret is the shortest configured secret Redact looks for: shorter ones
// would hide ordinary words.
const minSecret = 8

// Redact returns a slog ReplaceAttr function, defence in depth behind callers
// that already avoid logging secrets. It hides:
//   - the whole value of any attribute keyed authorization, token, key,
//     api_key or pms_token (any case), or nested in a group so named;
//   - in any string value (the message included) and in the text of any
//     other value (errors, structs, slices), every partner key (svc_live_ or
//     svc_test_ followed by 24 or more letters and digits) and every
//     occurrence of one of secrets (ignored when shorter than 8 bytes).
//
// Each becomes "[REDACTED]". Redact also writes every time.Duration as
// its Go text ("30s", "83µs"), not slog's raw nanoseconds
// ("interval":30000000000), which a person reading a log cannot take in.
func Redact(secrets ...string) func(groups []string, a slog.Attr) slog.Attr {
	own := slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return len(s) < minSecret })
	return func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.LevelKey {
			// slog hands the level over as an Any; returned as it is,
			// the JSON handler encodes it with encoding/json (reflection,
			// an allocation) on every record. The same text as a string
			// is the same output.
			if l, ok := a.Value.Any().(slog.Level); ok {
				return slog.String(a.Key, l.String())
			}
		}
		if sensitive(a.Key) || len(groups) > 0 && slices.ContainsFunc(groups, sensitive) {
			return slog.String(a.Key, Redacted)
		}
		switch a.Value.Kind() {
		case slog.KindDuration:
			return slog.String(a.Key, a.Value.Duration().String())
		case slog.KindString:
			if s, ok := redactString(a.Value.String(), own); ok {
				return slog.String(a.Key, s)
			}
		case slog.KindAny:
			if s, ok := redactString(fmt.Sprint(a.Value.Any()), own); ok {
				return slog.String(a.Key, s)
			}
		}
		return a
	}
}

// redactString hides partner keys and secrets in s; ok reports a change.
func redactString(s string, secrets []string) (string, bool) {
	out, changed := s, false
	for _, sec := range secrets {
		if strings.Contains(out, sec) {
			out, changed = strings.ReplaceAll(out, sec, Redacted), true
		}
	}
	if r, ok := redactKeys(out); ok {
		out, changed = r, true
	}
	return out, changed
}

// redactKeys replaces every svc_live_/svc_test_ + 24 or more [A-Za-z0-9].
func redactKeys(s string) (string, bool) {
	var b strings.Builder
	done := 0 // s[:done] is in b
	for i := 0; ; {
		j := strings.Index(s[i:], "svc_")
		if j < 0 {
			break
		}
		start := i + j
		i = start + len("svc_")
		if !strings.HasPrefix(s[i:], "live_") && !strings.HasPrefix(s[i:], "test_") {
			continue
		}
		end := i + len("live_")
		for end < len(s) && isAlnum(s[end]) {
			end++
		}
		if end-i-len("live_") >= 24 {
			b.WriteString(s[done:start])
			b.WriteString(Redacted)
			done, i = end, end
		}
	}
	if done == 0 {
		return s, false
	}
	b.WriteString(s[done:])
	return b.String(), true
}

// lowerASCII reports whether s has no upper-case letter and no byte
// outside ASCII (where EqualFold's Unicode folding could still match).
func lowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// TraceHandler wraps h so that each record logged with a context holding a
// valid span context gets trace_id, span_id and trace_flags attributes
// (hex), letting an SRE go from a log line to its trace. Logged inside a
// WithGroup, they land in that group.
func TraceHandler(h slog.Handler) slog.Handler { return traceHandler{h} }

type traceHandler struct{ slog.Handler }

func (t traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		var buf [TraceIDsLen]byte
		a := TraceAttrs(sc, string(AppendTraceIDs(buf[:0], sc))) // one allocation for both ids
		r.AddAttrs(a[:]...)
	}
	return t.Handler.Handle(ctx, r)
}

// TraceIDsLen is the length of AppendTraceIDs's text.
const TraceIDsLen = 2*len(trace.TraceID{}) + 2*len(trace.SpanID{})

// AppendTraceIDs appends sc's trace id and span id in hex, TraceIDsLen
// bytes: the text TraceAttrs takes.
func AppendTraceIDs(b []byte, sc trace.SpanContext) []byte {
	tid, sid := sc.TraceID(), sc.SpanID()
	return hex.AppendEncode(hex.AppendEncode(b, tid[:]), sid[:])
}

// TraceAttrs are the attributes TraceHandler adds to a record logged with
// sc's span (trace_id, span_id, trace_flags), for a caller that writes them
// itself and logs without the span: ids is AppendTraceIDs's text of sc,
// made once for every line of a request (the edge's access log).
func TraceAttrs(sc trace.SpanContext, ids string) [3]slog.Attr {
	n := 2 * len(trace.TraceID{})
	return [3]slog.Attr{slog.String(LogTraceID, ids[:n]), slog.String(LogSpanID, ids[n:]),
		slog.String(LogTraceFlags, traceFlags(sc))}
}

func (h traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(as)}
}

func (h traceHandler) WithGroup(g string) slog.Handler { return traceHandler{h.Handler.WithGroup(g)} }

// SDKErrors turns the OpenTelemetry SDK's own failures (an export that
// failed, a metric the backend refused) into rate-limited JSON WARN lines
// of the service's log, instead of the SDK's default, free text on stderr
// in the middle of the JSON stream (docs/contract.md section 20;
// docs/observability.md, "When telemetry fails").
//
// The SDK's handler is process-global (otel.SetErrorHandler, otel.SetLogger):
// the caller (a command's run) installs Handle and Logger, once; nothing
// here touches a global.
type SDKErrors struct {
	log      *slog.Logger
	getenv   func(string) string
	now      func() time.Time
	interval time.Duration

	mu   sync.Mutex
	last map[string]time.Time
	left map[string]int
}

// NewSDKErrors logs to log at most one line per signal per interval;
// getenv reads the OTLP endpoint variables, now the clock (nil: time.Now).
func NewSDKErrors(log *slog.Logger, getenv func(string) string, interval time.Duration, now func() time.Time) *SDKErrors {
	if now == nil {
		now = time.Now
	}
	return &SDKErrors{log: log, getenv: getenv, now: now, interval: interval,
		last: map[string]time.Time{}, left: map[string]int{}}
}

// Handle logs err (otel.ErrorHandler's method).
func (e *SDKErrors) Handle(err error) {
	if err == nil {
		return
	}
	msg := err.Error()
	signal := sdkSignal(msg)
	now := e.now()
	e.mu.Lock()
	if last, ok := e.last[signal]; ok && now.Sub(last) < e.interval {
		e.left[signal]++
		e.mu.Unlock()
		return
	}
	e.last[signal] = now
	left := e.left[signal]
	e.left[signal] = 0
	e.mu.Unlock()
	attrs := []any{"signal", signal, "endpoint", e.endpoint(signal), "error", msg}
	if left > 0 {
		attrs = append(attrs, "suppressed", left)
	}
	e.log.Warn("telemetry export failed", attrs...)
}

// Logger is a logr.Logger writing to the same log, for otel.SetLogger: the
// SDK's own warnings (V(1)) come out at WARN, its errors at ERROR, and its
// chatter (V(4) and up) only at DEBUG.
func (e *SDKErrors) Logger() logr.Logger {
	return logr.FromSlogHandler(sdkLevels{e.log.Handler()})
}

// sdkLevels maps logr's verbosity, which FromSlogHandler turns into
// slog.Level(-V), onto the levels the SDK means: V(1) warn, the rest debug.
type sdkLevels struct{ slog.Handler }

func (h sdkLevels) level(l slog.Level) slog.Level {
	switch {
	case l >= slog.LevelInfo:
		return l
	case l == -1:
		return slog.LevelWarn
	default:
		return slog.LevelDebug
	}
}

func (h sdkLevels) Enabled(ctx context.Context, l slog.Level) bool {
	return h.Handler.Enabled(ctx, h.level(l))
}

func (h sdkLevels) Handle(ctx context.Context, r slog.Record) error {
	r.Level = h.level(r.Level)
	return h.Handler.Handle(ctx, r)
}

func (h sdkLevels) WithAttrs(as []slog.Attr) slog.Handler { return sdkLevels{h.Handler.WithAttrs(as)} }
func (h sdkLevels) WithGroup(g string) slog.Handler       { return sdkLevels{h.Handler.WithGroup(g)} }

// sdkSignal names the signal an SDK error is about, from its text (the
// exporters say "traces export", "failed to upload metrics", ...).
func sdkSignal(msg string) string {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "trace") || strings.Contains(m, "span"):
		return "traces"
	case strings.Contains(m, "metric"):
		return "metrics"
	case strings.Contains(m, "log"):
		return "logs"
	}
	return "unknown"
}

// endpoint is where signal is sent: its own OTLP variable, else the
// common one, else the exporter's default.
func (e *SDKErrors) endpoint(signal string) string {
	if v := strings.TrimSpace(e.getenv("OTEL_EXPORTER_OTLP_" + strings.ToUpper(signal) + "_ENDPOINT")); v != "" && signal != "unknown" {
		return v
	}
	if v := strings.TrimSpace(e.getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		return v
	}
	return "default"
}

// traceFlags is the two hex digits of sc's flags, without an allocation.
func traceFlags(sc trace.SpanContext) string {
	f := byte(sc.TraceFlags())
	return hexByte[2*int(f) : 2*int(f)+2]
}

// hexByte is every byte's two hex digits, in order.
var hexByte = func() string {
	b := make([]byte, 0, 512)
	for i := range 256 {
		b = append(b, "0123456789abcdef"[i>>4], "0123456789abcdef"[i&0xF])
	}
	return string(b)
}()

package observability

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Redacted replaces a secret in a log line.
const Redacted = "[REDACTED]"

// Log attribute keys written by TraceHandler.
const (
	LogTraceID = "trace_id"
	LogSpanID  = "span_id"
)

// NewLogger returns a logger writing to w: JSON lines for format "json" (and
// for any value other than "text"), logfmt-style text for "text", at level
// and above. Records carry trace_id and span_id when their context holds a
// span (use the *Context logging methods), and pass through Redact with
// secrets (for example the PMS token): see Redact for what is hidden.
//
// Run should validate the format setting itself; NewLogger never fails.
func NewLogger(w io.Writer, format string, level slog.Level, secrets ...string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: Redact(secrets...)}
	if strings.EqualFold(format, "text") {
		return slog.New(TraceHandler(slog.NewTextHandler(w, opts)))
	}
	// JSONHandler's bytes, faster, trace ids included (jsonline.go).
	return slog.New(newJSONLineHandler(w, opts))
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
// valid span context gets trace_id and span_id attributes (hex), letting an
// SRE go from a log line to its trace. Logged inside a WithGroup, they land in
// that group.
func TraceHandler(h slog.Handler) slog.Handler { return traceHandler{h} }

type traceHandler struct{ next slog.Handler }

func (t traceHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.next.Enabled(ctx, l)
}

func (t traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String(LogTraceID, sc.TraceID().String()), slog.String(LogSpanID, sc.SpanID().String()))
	}
	return t.next.Handle(ctx, r)
}

func (t traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{t.next.WithAttrs(as)}
}

func (t traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{t.next.WithGroup(name)}
}

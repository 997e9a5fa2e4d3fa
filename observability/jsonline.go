package observability

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/trace"
)

// jsonLineHandler writes, byte for byte, the JSON lines of log/slog's
// JSONHandler under TraceHandler with NewLogger's options (Redact as
// ReplaceAttr), at about half its CPU, for the records the hot path logs:
// strings, integers, booleans and times (Redact made durations text). Any
// other record (a float, a group, an Any or LogValuer Redact leaves as it
// is, an empty key) and every handler made by WithAttrs or WithGroup go to
// the JSONHandler itself. Both write through one mutex, one Write per line.
//
// Measured against the alternatives (BenchmarkAccessLogLine and bench/README.md):
// log/slog's JSONHandler spends most of a line in its generic attribute
// walk and in calling ReplaceAttr through an Attr copy for the built-in
// keys; phuslu/log's slog handler is as fast as this one but falls back to
// log/slog as soon as ReplaceAttr is set and writes control characters
// unescaped (invalid JSON).
type jsonLineHandler struct {
	level  slog.Leveler
	out    *lockedWriter
	redact func(groups []string, a slog.Attr) slog.Attr
	slow   slog.Handler // TraceHandler over a JSONHandler with the same options, writing to out
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func newJSONLineHandler(w io.Writer, opts *slog.HandlerOptions) *jsonLineHandler {
	out := &lockedWriter{w: w}
	return &jsonLineHandler{level: opts.Level, out: out, redact: opts.ReplaceAttr,
		slow: TraceHandler(slog.NewJSONHandler(out, opts))}
}

func (h *jsonLineHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *jsonLineHandler) WithAttrs(as []slog.Attr) slog.Handler { return h.slow.WithAttrs(as) }
func (h *jsonLineHandler) WithGroup(name string) slog.Handler    { return h.slow.WithGroup(name) }

var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

func (h *jsonLineHandler) Handle(ctx context.Context, r slog.Record) error {
	if !r.Time.IsZero() {
		if y := r.Time.Year(); y < 0 || y >= 10000 {
			return h.slow.Handle(ctx, r) // JSONHandler's own error text
		}
	}
	bp := linePool.Get().(*[]byte)
	b := append((*bp)[:0], '{')
	if !r.Time.IsZero() {
		b = append(b, `"time":"`...)
		b = r.Time.Round(0).AppendFormat(b, time.RFC3339Nano) // as JSONHandler: no monotonic reading
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = appendJSONString(b, r.Level.String())
	b = append(b, `,"msg":`...)
	b = appendJSONString(b, h.redact(nil, slog.String(slog.MessageKey, r.Message)).Value.String())
	// One pass: each attribute is resolved, redacted and encoded; the
	// first one this encoder does not write (see the type's comment) sends
	// the whole record to JSONHandler instead.
	fast := true
	r.Attrs(func(a slog.Attr) bool {
		a.Value = a.Value.Resolve()
		a = h.redact(nil, a)
		if a.Key == "" {
			fast = false
			return false
		}
		b = append(b, ',')
		b = appendJSONString(b, a.Key)
		b = append(b, ':')
		switch v := a.Value; v.Kind() {
		case slog.KindString:
			b = appendJSONString(b, v.String())
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindUint64:
			b = strconv.AppendUint(b, v.Uint64(), 10)
		case slog.KindBool:
			b = strconv.AppendBool(b, v.Bool())
		case slog.KindTime:
			t := v.Time()
			if y := t.Year(); y < 0 || y >= 10000 {
				fast = false // JSONHandler writes its own error text
				return false
			}
			b = append(b, '"')
			b = t.AppendFormat(b, time.RFC3339Nano)
			b = append(b, '"')
		default:
			fast = false
			return false
		}
		return true
	})
	if !fast {
		putLine(bp, b)
		return h.slow.Handle(ctx, r)
	}
	// trace_id, span_id and trace_flags last, as TraceHandler adds them,
	// encoded in place: TraceHandler's strings would cost two allocations
	// a line.
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		tid, sid := sc.TraceID(), sc.SpanID()
		b = append(b, `,"`+LogTraceID+`":"`...)
		b = hex.AppendEncode(b, tid[:])
		b = append(b, `","`+LogSpanID+`":"`...)
		b = hex.AppendEncode(b, sid[:])
		b = append(b, `","`+LogTraceFlags+`":"`...)
		b = append(b, traceFlags(sc)...)
		b = append(b, '"')
	}
	b = append(b, "}\n"...)
	_, err := h.out.Write(b)
	putLine(bp, b)
	return err
}

func putLine(bp *[]byte, b []byte) {
	if cap(b) <= 64<<10 {
		*bp = b[:0]
		linePool.Put(bp)
	}
}

const hexDigits = "0123456789abcdef"

// jsonSafe marks the bytes a JSON string holds as they are: printable
// ASCII but '"' and '\\' (one table load per byte on the hot path).
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendJSONString appends s quoted as log/slog's JSON handler quotes it
// (encoding/json's rules without HTML escaping): \" \\ \n \r \t, \u00XX for
// the other control characters, \ufffd for invalid UTF-8, and U+2028 and
// U+2029 escaped.
//
// mapping's appendString (encode.go) shares its loop: they stay apart
// because observability and mapping import nothing of ours
// (docs/architecture.md), and their rules differ (encoding/json's HTML
// escaping and short \b \f there, slog's quoting here).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jsonSafe[c] {
			i++
			continue
		}
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			if r, size = utf8.DecodeRuneInString(s[i:]); (r != utf8.RuneError || size > 1) && r != '\u2028' && r != '\u2029' {
				i += size
				continue
			}
		}
		b = append(b, s[start:i]...)
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < utf8.RuneSelf:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		case r == utf8.RuneError:
			b = append(b, `\ufffd`...)
		default: // U+2028, U+2029
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

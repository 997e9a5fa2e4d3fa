package observability

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// stdLogger is NewLogger as it was: log/slog's own JSONHandler.
func stdLogger(w *bytes.Buffer, level slog.Level, secrets ...string) *slog.Logger {
	return slog.New(TraceHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: Redact(secrets...)})))
}

// NewLogger's JSON lines are, byte for byte, log/slog's JSONHandler's with
// the same options: keys, values, escaping (random strings included), trace
// ids, redactions, and the records it hands to JSONHandler itself.
func TestJSONLineHandlerWritesJSONHandlersBytes(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled})
	traced := trace.ContextWithSpanContext(context.Background(), sc)
	at := time.Date(2026, 11, 23, 20, 1, 2, 345678900, time.UTC)
	type rec struct {
		ctx   context.Context
		t     time.Time
		level slog.Level
		msg   string
		attrs []slog.Attr
	}
	recs := []rec{
		{context.Background(), at, slog.LevelInfo, "request", []slog.Attr{
			slog.String("method", "GET"), slog.String("route", "/v1/properties/{propertyId}"),
			slog.Int("status", 200), slog.Duration("duration", 83*time.Microsecond), slog.Int64("bytes", 336),
			slog.String("request_id", "req_qyyM8nwPfXTG8JvkGvFJKAUk"), slog.String("code", "NOT_FOUND"),
			slog.String("correlation_id", "c-1"), slog.String("key_id", "key_7Hq2Lm9Xa1"),
			slog.String("client_address", "2001:db8::1"), slog.Uint64("u", 7), slog.Time("at", at),
		}},
		{traced, at, slog.LevelError, "request", []slog.Attr{
			slog.String("method", "M\"\\\n\r\t\x01\x1f\x7f<>&é\u2028\u2029\xff"), slog.Int("status", 502),
			slog.String("error", "pms said "+pmsToken+" and "+liveKey),
			slog.String("authorization", "Bearer x"), slog.Bool("b", true),
		}},
		{traced, at, slog.LevelError, "with a float, a group, an Any", []slog.Attr{
			slog.Float64("f", 1.5), slog.Any("err", errors.New("boom "+testKey)),
			slog.Group("token", slog.String("inner", "secret-in-group")),
			slog.Group("req", slog.String("authorization", "Bearer y"), slog.Int("n", 1)),
		}},
		{context.Background(), at, slog.LevelWarn + 2, "partner sent " + liveKey, nil},
		{context.Background(), time.Time{}, slog.LevelInfo, "no time", []slog.Attr{slog.String("", "empty key")}},
		{context.Background(), at.AddDate(9000, 0, 0), slog.LevelInfo, "year 11026", nil},
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		b := make([]byte, rnd.IntN(40))
		for i := range b {
			b[i] = byte(rnd.IntN(256))
			if rnd.IntN(3) == 0 {
				b[i] = byte(rnd.IntN(0x80))
			}
		}
		recs = append(recs, rec{context.Background(), at, slog.LevelInfo, string(b),
			[]slog.Attr{slog.String(string(b), string(b)+"é\u2028")}})
	}
	for i, rc := range recs {
		var want, got bytes.Buffer
		for _, l := range []*slog.Logger{stdLogger(&want, slog.LevelInfo, pmsToken), NewLogger(&got, "json", slog.LevelInfo, pmsToken)} {
			r := slog.NewRecord(rc.t, rc.level, rc.msg, 0)
			r.AddAttrs(rc.attrs...)
			if err := l.Handler().Handle(rc.ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		if got.String() != want.String() {
			t.Errorf("record %d:\n got %q\nwant %q", i, got.String(), want.String())
		}
	}
}

// Below the level nothing is written; a derived logger (With, WithGroup)
// still redacts.
func TestJSONLineHandlerLevelAndDerived(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, "json", slog.LevelInfo)
	log.Debug("hidden")
	log.With("api_key", liveKey).WithGroup("token").Info("x", "v", "in-a-secret-group")
	if bytes.Contains(buf.Bytes(), []byte("hidden")) || bytes.Contains(buf.Bytes(), []byte(liveKey)) ||
		bytes.Contains(buf.Bytes(), []byte("in-a-secret-group")) || !bytes.Contains(buf.Bytes(), []byte(`"msg":"x"`)) {
		t.Errorf("wrote %s", buf.String())
	}
}

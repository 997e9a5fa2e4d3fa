package observability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

const (
	liveKey  = "svc_live_AbCdEfGhIjKlMnOpQrStUvWx12"
	testKey  = "svc_test_0123456789abcdefghijklmnop"
	pmsToken = "pms-token-5f2b8c1e9d"
)

type header struct{ Auth string }

func (h header) String() string { return "Bearer " + h.Auth }

func TestLoggerRedactsSecrets(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			log := NewLogger(&buf, format, slog.LevelDebug, pmsToken)
			log.Info("partner sent "+liveKey+" twice",
				"Authorization", "Bearer anything-at-all",
				"TOKEN", "tok",
				"key", "k",
				"Api_Key", "ak",
				"pms_token", pmsToken,
				"header", "Bearer "+testKey,
				"err", errors.New("upstream said: "+pmsToken),
				"hdr", header{liveKey},
				"keys", []string{liveKey, testKey},
				slog.Group("token", "inner", "value-in-a-secret-group"),
				slog.Group("req", "authorization", "Bearer x"),
			)
			log.With("api_key", liveKey).Debug("with", "k2", fmt.Sprintf("url?key=%s&x=1", testKey))
			out := buf.String()
			for _, secret := range []string{liveKey, testKey, pmsToken, "anything-at-all", "tok\"", "value-in-a-secret-group", "Bearer x"} {
				if strings.Contains(out, secret) {
					t.Errorf("log holds %q:\n%s", secret, out)
				}
			}
			if n := strings.Count(out, Redacted); n < 14 {
				t.Errorf("%d redactions, want at least 14:\n%s", n, out)
			}
			for _, kept := range []string{"partner sent", "twice", "upstream said: ", "url?key=", "&x=1"} {
				if !strings.Contains(out, kept) {
					t.Errorf("log lost the surrounding text %q:\n%s", kept, out)
				}
			}
		})
	}
}

func TestLoggerKeepsWhatIsNotSecret(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, "json", slog.LevelInfo, "short") // too short to be hunted
	notKeys := "svc_live_tooShort svc_prod_AbCdEfGhIjKlMnOpQrStUvWx12 svc_"
	log.Info("access", "key_id", "key_7Hq2Lm9Xa1", "status", 200, "note", notKeys, "word", "short")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not JSON: %v: %s", err, buf.String())
	}
	want := map[string]any{"msg": "access", "key_id": "key_7Hq2Lm9Xa1", "status": 200.0, "note": notKeys, "word": "short"}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("%s = %v, want %v", k, line[k], v)
		}
	}
}

func TestRedactKeys(t *testing.T) {
	tests := map[string]string{
		"":                                    "",
		liveKey:                               Redacted,
		"a" + liveKey + "b-" + testKey:        "a" + Redacted + "-" + Redacted,
		"svc_svc_live_" + liveKey[9:]:         "svc_" + Redacted,
		"svc_live_" + strings.Repeat("a", 23): "svc_live_" + strings.Repeat("a", 23),
		"svc_live_" + strings.Repeat("a", 24): Redacted,
	}
	for in, want := range tests {
		if got, _ := redactKeys(in); got != want {
			t.Errorf("redactKeys(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoggerWritesTraceIDs(t *testing.T) {
	for _, tc := range []struct{ sampler, flags string }{{"always_on", "01"}, {"always_off", "00"}} {
		t.Run(tc.sampler, func(t *testing.T) { loggerWritesTraceIDs(t, tc.sampler, tc.flags) })
	}
}

// loggerWritesTraceIDs: a line logged under a span carries its trace_id,
// span_id and trace_flags (the JSON encoder's fast path and log/slog's
// handler, for a line the fast path leaves to it, alike).
func loggerWritesTraceIDs(t *testing.T, sampler, flags string) {
	tel, _, _ := newTest(t, map[string]string{"OTEL_TRACES_SAMPLER": sampler})
	var buf bytes.Buffer
	log := NewLogger(&buf, "json", slog.LevelInfo)
	ctx, span := tel.Tracer().Start(context.Background(), "req")
	log.InfoContext(ctx, "inside")
	log.InfoContext(ctx, "inside, slog's encoder", "ratio", 0.5) // a float: not the fast path's
	span.End()
	log.InfoContext(context.Background(), "outside")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3: %s", len(lines), buf.String())
	}
	for _, l := range lines[:2] {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m[LogTraceFlags] != flags {
			t.Errorf("%s: trace_flags %v, want %s", l, m[LogTraceFlags], flags)
		}
	}
	lines = []string{lines[0], lines[2]}
	var in, out map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &out); err != nil {
		t.Fatal(err)
	}
	sc := span.SpanContext()
	if in[LogTraceID] != sc.TraceID().String() || in[LogSpanID] != sc.SpanID().String() {
		t.Errorf("inside line has trace %v span %v, want %s %s", in[LogTraceID], in[LogSpanID], sc.TraceID(), sc.SpanID())
	}
	if _, ok := out[LogTraceID]; ok {
		t.Errorf("line without a span carries trace_id: %s", lines[1])
	}
}

func TestLoggerLevelAndFormat(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, "TEXT", slog.LevelWarn)
	log.Info("dropped")
	log.Warn("kept", "n", 1)
	if got := buf.String(); strings.Contains(got, "dropped") || !strings.Contains(got, `msg=kept n=1`) {
		t.Errorf("text logger at warn wrote %q", got)
	}
}

// The level passes Redact as a string, written exactly as slog writes a
// Level (custom levels included), in both formats.
func TestRedactLevelUnchanged(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		for _, l := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelError, slog.LevelError + 2, slog.LevelDebug - 3} {
			var got, want bytes.Buffer
			NewLogger(&got, format, slog.LevelDebug-4).Log(context.Background(), l, "m")
			opts := &slog.HandlerOptions{Level: slog.LevelDebug - 4}
			var h slog.Handler = slog.NewJSONHandler(&want, opts)
			if format == "text" {
				h = slog.NewTextHandler(&want, opts)
			}
			slog.New(h).Log(context.Background(), l, "m")
			// Drop the time: the two records were stamped apart.
			g, w := got.String(), want.String()
			if g[strings.Index(g, "level"):] != w[strings.Index(w, "level"):] {
				t.Errorf("%s %v: got %q, want %q", format, l, g, w)
			}
		}
	}
}

// docs/contract.md section 18: durations are logged as text ("30s"), not raw
// nanoseconds ("interval":30000000000), by the JSON logger's fast path, by
// its fallback (a record with a float goes to JSONHandler), and as text.
func TestDurationsLoggedAsText(t *testing.T) {
	for _, format := range []string{"json", "text"} {
		for _, withFloat := range []bool{false, true} {
			var buf bytes.Buffer
			log := NewLogger(&buf, format, slog.LevelInfo)
			args := []any{"interval", 30 * time.Second, "took", 83 * time.Microsecond}
			if withFloat {
				args = append(args, "ratio", 0.5)
			}
			log.Info("shadow on", args...)
			line := buf.String()
			want := []string{`"interval":"30s"`, `"took":"83µs"`}
			if format == "text" {
				want = []string{"interval=30s", "took=83µs"}
			}
			for _, w := range want {
				if !strings.Contains(line, w) {
					t.Errorf("%s (float %v): %q lacks %s", format, withFloat, line, w)
				}
			}
			if strings.Contains(line, "30000000000") {
				t.Errorf("%s: raw nanoseconds in %q", format, line)
			}
		}
	}
}

// Below the level nothing is written; a derived logger (With, WithGroup)
// still redacts.
func TestLoggerLevelAndDerived(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, "json", slog.LevelInfo)
	log.Debug("hidden")
	log.With("api_key", liveKey).WithGroup("token").Info("x", "v", "in-a-secret-group")
	if bytes.Contains(buf.Bytes(), []byte("hidden")) || bytes.Contains(buf.Bytes(), []byte(liveKey)) ||
		bytes.Contains(buf.Bytes(), []byte("in-a-secret-group")) || !bytes.Contains(buf.Bytes(), []byte(`"msg":"x"`)) {
		t.Errorf("wrote %s", buf.String())
	}
}

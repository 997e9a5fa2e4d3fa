package listener

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// net/http's errors reach the operator as warnings, at most errorLogBurst a
// window; the number dropped is reported with the next line logged.
func TestErrorLogRateLimited(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newErrorLog(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), func() time.Time { return now })

	for i := range errorLogBurst + 5 {
		l.Printf("http: TLS handshake error from 127.0.0.1:%d: EOF", 40000+i)
	}
	lines := logLines(t, &buf)
	if len(lines) != errorLogBurst {
		t.Fatalf("%d lines logged in one window, want %d", len(lines), errorLogBurst)
	}
	if lines[0]["level"] != "WARN" || lines[0]["msg"] != "http server error" ||
		!strings.Contains(lines[0]["error"].(string), "TLS handshake error") {
		t.Errorf("first line: %v", lines[0])
	}

	now = now.Add(errorLogWindow - time.Second) // same window: still quiet
	l.Print("http: Accept error: too many open files")
	if n := len(logLines(t, &buf)); n != 0 {
		t.Errorf("%d lines logged past the burst", n)
	}

	now = now.Add(time.Second) // a new window
	l.Print("http: Accept error: too many open files")
	lines = logLines(t, &buf)
	if len(lines) != 1 || lines[0]["suppressed"] != float64(6) {
		t.Errorf("next window: %v, want one line reporting 6 suppressed", lines)
	}

	l.Print(strings.Repeat("x", 10_000))
	lines = logLines(t, &buf)
	if len(lines) != 1 || len(lines[0]["error"].(string)) > errorLogClip {
		t.Errorf("a long message was not clipped")
	}
}

// logLines parses and empties buf.
func logLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	buf.Reset()
	return out
}

package listener

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability"
)

// net/http's errors reach the operator as warnings, at most one a minute
// per cause (the message without the peer's address); the number left
// out is reported with the next line of that cause.
func TestErrorLogRateLimited(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newErrorLog(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), func() time.Time { return now })

	for i := range 15 {
		l.Printf("http: TLS handshake error from 127.0.0.1:%d: EOF", 40000+i)
	}
	lines := logLines(t, &buf)
	if len(lines) != 1 {
		t.Fatalf("%d lines logged for one cause within a minute, want 1", len(lines))
	}
	if lines[0]["level"] != "WARN" || lines[0]["msg"] != "http server error" ||
		!strings.Contains(lines[0]["error"].(string), "TLS handshake error") {
		t.Errorf("first line: %v", lines[0])
	}

	l.Print("http: Accept error: too many open files") // another cause
	if n := len(logLines(t, &buf)); n != 1 {
		t.Errorf("%d lines for a second cause, want 1", n)
	}

	now = now.Add(observability.LogEvery - time.Second) // still quiet
	l.Printf("http: TLS handshake error from 10.0.0.1:%d: EOF", 50000)
	if n := len(logLines(t, &buf)); n != 0 {
		t.Errorf("%d lines logged within the minute", n)
	}

	now = now.Add(time.Second)
	l.Printf("http: TLS handshake error from 10.0.0.2:%d: EOF", 50001)
	lines = logLines(t, &buf)
	if len(lines) != 1 || lines[0]["suppressed"] != float64(15) {
		t.Errorf("a minute later: %v, want one line reporting 15 suppressed", lines)
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

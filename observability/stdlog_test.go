package observability

import (
	"bytes"
	"encoding/json"
	"log"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// A standard-log line becomes a WARN line of the logger without the
// peer's bytes, and is clipped; restore puts the standard logger back.
func TestRouteStdLog(t *testing.T) {
	var out, before bytes.Buffer
	defer log.SetOutput(log.Writer())
	log.SetOutput(&before)
	restore := RouteStdLog(slog.New(slog.NewJSONHandler(&out, nil)))
	log.Printf("Unsolicited response received on idle HTTP channel starting with \"HTTP/1.1 200 OK\\r\\nX-Internal-Secret: s3\"; err=<nil>")
	log.Print(strings.Repeat("x", 3*stdLogClip))
	restore()
	var lines []map[string]any
	for l := range strings.Lines(out.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), out.String())
	}
	if lines[0]["level"] != "WARN" || lines[0]["error"] != "Unsolicited response received on idle HTTP channel" {
		t.Errorf("first line %v", lines[0])
	}
	if strings.Contains(out.String(), "s3") {
		t.Errorf("the peer's bytes were logged:\n%s", out.String())
	}
	if got := len(lines[1]["error"].(string)); got != stdLogClip {
		t.Errorf("a long line kept %d bytes, want %d", got, stdLogClip)
	}
	if log.Writer() != &before || log.Flags() != log.LstdFlags {
		t.Error("restore did not give the standard logger back its output and flags")
	}
}

// A standard-log line repeated once per stray PMS answer is written once
// per LogEvery per message; the next one counts those left out.
func TestRouteStdLogRateBound(t *testing.T) {
	var out bytes.Buffer
	defer log.SetOutput(log.Writer())
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	restore := routeStdLog(slog.New(slog.NewJSONHandler(&out, nil)), func() time.Time { return now })
	stray := "Unsolicited response received on idle HTTP channel starting with \"HTTP/1.1 408\"; err=<nil>"
	for range 100 {
		log.Print(stray)
	}
	log.Print("another cause")
	now = now.Add(LogEvery)
	log.Print(stray)
	restore()
	var lines []map[string]any
	for l := range strings.Lines(out.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines for 101 strays over a minute and one other line, want 3:\n%s", len(lines), out.String())
	}
	if lines[1]["error"] != "another cause" {
		t.Errorf("the other cause was held back: %v", lines[1])
	}
	if lines[2]["suppressed"] != float64(99) {
		t.Errorf("the line after a minute counts %v left out, want 99", lines[2]["suppressed"])
	}
}

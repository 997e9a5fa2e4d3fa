package observability

import (
	"bytes"
	"encoding/json"
	"log"
	"log/slog"
	"strings"
	"testing"
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

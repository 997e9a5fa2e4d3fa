package observability

import (
	"bytes"
	"encoding/json"
	"log"
	"log/slog"
	"strings"
	"testing"
)

// A line of Go's standard logger that quotes a peer's bytes, as net/http
// writes one when a PMS writes on an idle connection, is logged without
// them: the words before the quote, and how many bytes were left out.
func TestStdLogKeepsNoQuotedBytes(t *testing.T) {
	var out bytes.Buffer
	restore := RouteStdLog(slog.New(slog.NewJSONHandler(&out, nil)))
	defer restore()
	stray := "HTTP/1.1 200 OK\r\nowner_email secret.owner@internal.example\r\n\r\n"
	log.Printf("Unsolicited response received on idle HTTP channel starting with %q; err=%v", stray, nil)
	log.Printf("Error enabling Transport HTTP/2 support: %v", "plain words")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || strings.Contains(out.String(), "internal.example") {
		t.Fatalf("lines %q: want two, without the peer's bytes", lines)
	}
	var first, second struct {
		Level, Msg, Error string
		Left              int `json:"bytes_left_out"`
	}
	_ = json.Unmarshal([]byte(lines[0]), &first)
	_ = json.Unmarshal([]byte(lines[1]), &second)
	if first.Level != "WARN" || first.Error != "Unsolicited response received on idle HTTP channel" || first.Left <= len(stray) {
		t.Errorf("first line %+v: want the words before the quote, the rest counted", first)
	}
	if second.Error != "Error enabling Transport HTTP/2 support: plain words" || second.Left != 0 {
		t.Errorf("second line %+v: a line that quotes nothing is kept whole", second)
	}
}

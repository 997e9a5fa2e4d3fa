package observability

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestSDKErrorsAreRateLimitedJSONWarnings: an export failure is one JSON
// WARN line naming the signal and the endpoint; the next ones of the same
// signal within the interval are counted, not written; another signal has
// its own allowance; the SDK's logr warnings come out at WARN too.
func TestSDKErrorsAreRateLimitedJSONWarnings(t *testing.T) {
	var buf bytes.Buffer
	log := NewLogger(&buf, "json", slog.LevelInfo)
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	e := NewSDKErrors(log, env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}), time.Minute, func() time.Time { return now })

	metricsErr := errors.New("failed to upload metrics: failed to send metrics to http://127.0.0.1:4318/v1/metrics: 404 Not Found")
	e.Handle(metricsErr)
	for range 5 {
		now = now.Add(10 * time.Second)
		e.Handle(metricsErr)
	}
	e.Handle(errors.New("traces export: context deadline exceeded"))
	now = now.Add(time.Minute)
	e.Handle(metricsErr)
	e.Logger().V(1).Info("partial success", "rejected", 3)

	var lines []map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a JSON line: %q", l)
		}
		lines = append(lines, m)
	}
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4 (metrics, traces, metrics with 5 suppressed, the SDK's warning): %s", len(lines), buf.String())
	}
	want := []struct {
		signal     string
		suppressed float64
	}{{"metrics", 0}, {"traces", 0}, {"metrics", 5}}
	for i, w := range want {
		l := lines[i]
		if l["level"] != "WARN" || l["signal"] != w.signal || l["endpoint"] != "http://127.0.0.1:4318" {
			t.Errorf("line %d: %v, want a WARN about %s at the endpoint", i, l, w.signal)
		}
		if got, _ := l["suppressed"].(float64); got != w.suppressed {
			t.Errorf("line %d: suppressed %v, want %v", i, l["suppressed"], w.suppressed)
		}
	}
	if lines[3]["level"] != "WARN" || lines[3]["msg"] != "partial success" {
		t.Errorf("the SDK's V(1) warning: %v, want a WARN line", lines[3])
	}
}

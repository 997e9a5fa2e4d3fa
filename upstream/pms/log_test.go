package pms

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
)

// Retry chatter goes to the project's logger at debug (never to stderr),
// breaker changes at info, and the PMS token appears in neither.
func TestLogging(t *testing.T) {
	f := newFakePMS(t, nil)
	f.fault = status(503)
	var buf bytes.Buffer
	cfg := testConfig(f.srv.URL)
	cfg.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Breaker.ConsecutiveFailures = 1
	_, err := listHotels(newTestClient(t, cfg), context.Background(), "aurora")
	wantKind(t, err, upstream.BadGateway)

	var attempts, changes int
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec struct{ Level, Msg, From, To string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		switch {
		case strings.HasPrefix(rec.Msg, "pms attempt:"):
			attempts++
			if rec.Level != "DEBUG" {
				t.Errorf("retry log at %s: %s", rec.Level, line)
			}
		case rec.Msg == "pms circuit breaker state changed":
			changes++
			if rec.Level != "INFO" || rec.From != "closed" || rec.To != "open" {
				t.Errorf("breaker log: %s", line)
			}
		}
	}
	if attempts == 0 || changes != 1 {
		t.Errorf("%d retry lines, %d breaker lines, want some and 1:\n%s", attempts, changes, buf.String())
	}
	if strings.Contains(buf.String(), cfg.Token) {
		t.Errorf("the PMS token is in the logs:\n%s", buf.String())
	}
}

// A PMS that stays down makes the breaker open, probe and open again
// every open timeout: each transition is logged at most once a minute
// (docs/operations.md, "What to watch").
func TestBreakerLinesOnceAMinutePerTransition(t *testing.T) {
	f := newFakePMS(t, hotels(1, "aurora"))
	f.fault = func(w http.ResponseWriter, _ *http.Request, _ int64) bool {
		w.WriteHeader(http.StatusInternalServerError)
		return true
	}
	var logs testkit.LogBuffer
	cfg := testConfig(f.srv.URL)
	cfg.Logger = logs.Logger()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cfg.Now = func() time.Time { return now }
	cfg.Breaker.ConsecutiveFailures, cfg.Breaker.OpenTimeout = 1, time.Millisecond
	c := newTestClient(t, cfg)
	for range 5 {
		_, _ = c.GetHotel(context.Background(), "aurora", hotelID(1))
		testkit.Eventually(t, "the breaker half-opens", func() bool { return c.BreakerState() == "half-open" })
	}
	if n := logs.Count("pms circuit breaker state changed"); n != 3 {
		t.Errorf("%d breaker lines for 5 rounds of open and probe within a minute, want 3 (one per transition):\n%s", n, logs.String())
	}
}

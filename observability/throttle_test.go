package observability_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability"
)

// A cause is allowed once per Every; the next allowed line carries how
// many were left out; causes are apart, and bounded in number.
func TestThrottle(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	th := &observability.Throttle{Now: func() time.Time { return now }}
	if n, ok := th.Allow("a"); !ok || n != 0 {
		t.Fatalf("first a: %d %v", n, ok)
	}
	for range 5 {
		if _, ok := th.Allow("a"); ok {
			t.Fatalf("a again within a minute allowed")
		}
	}
	if _, ok := th.Allow("b"); !ok {
		t.Fatalf("b held back by a")
	}
	now = now.Add(observability.LogEvery - time.Second)
	if _, ok := th.Allow("a"); ok {
		t.Fatalf("a allowed after 59 s")
	}
	now = now.Add(time.Second)
	if n, ok := th.Allow("a"); !ok || n != 6 {
		t.Fatalf("a after a minute: %d %v, want 6 left out", n, ok)
	}
	// Past the bound on causes, new ones share one.
	for i := range 200 {
		th.Allow(fmt.Sprint("cause ", i))
	}
	allowed := 0
	for i := range 200 {
		if _, ok := th.Allow(fmt.Sprint("new cause ", i)); ok {
			allowed++
		}
	}
	if allowed != 0 {
		t.Errorf("%d new causes allowed past the bound within the minute", allowed)
	}
}

// ThrottleWarnings paces WARN lines by message and lets INFO through.
func TestThrottleWarnings(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	log := observability.ThrottleWarnings(slog.New(slog.NewJSONHandler(&out, nil)), func() time.Time { return now }).With("component", "oauth")
	for range 10 {
		log.Warn("oauth keys fetch failed; cached keys stay in force")
		log.Info("oauth keys fetched")
	}
	now = now.Add(observability.LogEvery)
	log.Warn("oauth keys fetch failed; cached keys stay in force")
	if n := strings.Count(out.String(), "fetch failed"); n != 2 {
		t.Errorf("%d warnings, want 2:\n%s", n, out.String())
	}
	if n := strings.Count(out.String(), "keys fetched"); n != 10 {
		t.Errorf("%d info lines, want 10", n)
	}
	if !strings.Contains(out.String(), `"suppressed":9`) || !strings.Contains(out.String(), `"component":"oauth"`) {
		t.Errorf("the second warning does not count 9 left out, or the logger lost its attributes:\n%s", out.String())
	}
}

package upstream

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

func newTelemetry(t *testing.T) (*observability.Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tel, err := observability.New(context.Background(), observability.Config{SpanExporter: exp, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel, exp
}

// The PMS instruments keep the names and labels the SRE rules and
// dashboards use (docs/operations.md).
func TestPMSMetricsExposed(t *testing.T) {
	tel, _ := newTelemetry(t)
	ctx := context.Background()
	live, err := NewPMSMetrics(tel.Meter(), "live")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewPMSMetrics(tel.Meter(), "sandbox"); err != nil {
		t.Fatal(err)
	}
	// One failing PMS call: three attempts, two retries, breaker opened.
	live.Attempt(ctx, PMSHTTP5xx, 100*time.Millisecond)
	live.Retry(ctx, PMSHTTP5xx)
	live.Attempt(ctx, PMSTimeout, 2*time.Second)
	live.Retry(ctx, PMSTimeout)
	live.Attempt(ctx, PMSHTTP5xx, 100*time.Millisecond)
	live.BreakerState(ctx, BreakerOpen)
	live.Attempt(ctx, "bogus", time.Millisecond) // counted as connection

	fams := testkit.Scrape(t, tel.MetricsHandler())
	for outcome, want := range map[string]uint64{"http_5xx": 2, "timeout": 1, "connection": 1} {
		h := testkit.Series(t, fams, "partner_edge_pms_attempt_duration_seconds", map[string]string{"pms": "live", "outcome": outcome}).GetHistogram()
		if got := h.GetSampleCount(); got != want {
			t.Errorf("live attempts %s = %d, want %d", outcome, got, want)
		}
		if n := len(h.GetBucket()); n != len(observability.DurationBuckets())+1 {
			t.Errorf("attempt duration has %d buckets, want the semconv ones and +Inf", n)
		}
	}
	for outcome, want := range map[string]float64{"http_5xx": 1, "timeout": 1} {
		got := testkit.Series(t, fams, "partner_edge_pms_retries_total", map[string]string{"pms": "live", "outcome": outcome}).GetCounter().GetValue()
		if got != want {
			t.Errorf("retries after %s = %v, want %v", outcome, got, want)
		}
	}
	for pms, want := range map[string]float64{"live": 2, "sandbox": 0} {
		if got := testkit.Series(t, fams, "partner_edge_pms_breaker_state", map[string]string{"pms": pms}).GetGauge().GetValue(); got != want {
			t.Errorf("breaker %s = %v, want %v", pms, got, want)
		}
	}
}

// A retry is also told to the trace: an event on the recording span of ctx,
// none when there is no span.
func TestRetryAddsSpanEvent(t *testing.T) {
	tel, exp := newTelemetry(t)
	live, err := NewPMSMetrics(tel.Meter(), "live")
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tel.Tracer().Start(context.Background(), "pms.snapshot")
	live.Retry(ctx, PMSHTTP429)
	span.End()
	live.Retry(context.Background(), PMSHTTP429) // no span: no event, no panic
	spans := exp.GetSpans()
	if len(spans) != 1 || len(spans[0].Events) != 1 {
		t.Fatalf("spans %v", spans)
	}
	e := spans[0].Events[0]
	if e.Name != EventRetry || len(e.Attributes) != 1 || e.Attributes[0] != AttrPMSOutcome.String("http_429") {
		t.Errorf("event %s %v, want pms.retry partner_edge.pms.outcome=http_429", e.Name, e.Attributes)
	}
}

func TestOutcomeOfStatus(t *testing.T) {
	for status, want := range map[int]PMSOutcome{200: PMSOK, 204: PMSOK, 304: PMSOK, 400: PMSHTTP4xx, 404: PMSHTTP4xx,
		429: PMSHTTP429, 500: PMSHTTP5xx, 503: PMSHTTP5xx} {
		if got := OutcomeOfStatus(status); got != want {
			t.Errorf("OutcomeOfStatus(%d) = %s, want %s", status, got, want)
		}
	}
}

func TestParseBreakerState(t *testing.T) {
	for name, want := range map[string]BreakerState{"closed": BreakerClosed, "half-open": BreakerHalfOpen,
		"half_open": BreakerHalfOpen, "open": BreakerOpen, "weird": BreakerOpen} {
		if got := ParseBreakerState(name); got != want {
			t.Errorf("ParseBreakerState(%q) = %v, want %v", name, got, want)
		}
		if want != BreakerOpen || name == "open" {
			if back := ParseBreakerState(strings.ReplaceAll(want.String(), "_", "-")); back != want {
				t.Errorf("String/Parse round trip of %v gave %v", want, back)
			}
		}
	}
}

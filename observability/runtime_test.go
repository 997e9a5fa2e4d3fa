package observability_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

var emptyScopeLabel = regexp.MustCompile(`otel_scope_[a-z_]*=""`)

// docs/contract.md section 18: /metrics carries the Go runtime and the process
// under their conventional names beside the edge's own instruments, no
// series has an empty otel_scope_* label, and promtool's linter passes on
// the real scrape.
func TestMetricsRuntimeAndProcess(t *testing.T) {
	tel, err := observability.New(context.Background(), observability.Config{
		Getenv: func(string) string { return "" }, MetricReader: sdkmetric.NewManualReader()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	m := tel.Metrics()
	m.RequestStarted(context.Background(), "GET")
	m.RequestDone(context.Background(), "GET", "/v1/properties", 200, 3*time.Millisecond)
	m.KeyReload(context.Background(), true)

	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d", rec.Code)
	}
	scrape := rec.Body.Bytes()

	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(scrape))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	for _, name := range []string{
		"process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds",
		"process_start_time_seconds", "go_goroutines", "go_gc_duration_seconds",
		"go_memstats_heap_alloc_bytes", "go_gc_gomemlimit_bytes", "go_gc_gogc_percent",
		// the edge's own, still there
		"http_server_request_duration_seconds", "partner_edge_keys_reloads_total",
	} {
		if _, ok := fams[name]; !ok {
			t.Errorf("%s not exposed", name)
		}
	}
	if v := testkit.Series(t, fams, "process_resident_memory_bytes", nil).GetGauge().GetValue(); v <= 0 {
		t.Errorf("process_resident_memory_bytes = %v, want > 0", v)
	}
	if v := testkit.Series(t, fams, "go_goroutines", nil).GetGauge().GetValue(); v < 1 {
		t.Errorf("go_goroutines = %v, want >= 1", v)
	}
	if v := testkit.Series(t, fams, "process_start_time_seconds", nil).GetGauge().GetValue(); v < 1.7e9 {
		t.Errorf("process_start_time_seconds = %v, want a Unix time", v)
	}
	if got := emptyScopeLabel.FindAll(scrape, 3); got != nil {
		t.Errorf("series with an empty scope label: %q", got)
	}

	// promtool reads the exposition on stdin and lints it (names, units,
	// suffixes, help); exit 0 means no problem found.
	cmd := exec.Command(promtool(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(scrape)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

package grafana_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/observability/grafana"
)

// The committed JSON is what the Go code generates: run
// `go generate ./observability/grafana` after editing panels.go.
func TestDashboardGenerated(t *testing.T) {
	want, err := grafana.Dashboard()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(grafana.File)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, append(want, '\n')) {
		t.Errorf("%s is stale: run go generate ./observability/grafana", grafana.File)
	}
}

// The panels the alerts and docs/runbooks.md send an engineer to exist, and
// the dashboard covers what issue 21 asks: traffic, errors by code, latency
// histograms, cache outcomes, PMS attempts, breaker state, rate limiting,
// Redis, and links to traces.
func TestDashboardPanelsNamedByRunbooks(t *testing.T) {
	b, err := grafana.Dashboard()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Type, Title string
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	titles := map[string]bool{}
	for _, p := range d.Panels {
		titles[p.Title] = true
	}
	var named []string
	for _, f := range []struct {
		path string
		re   *regexp.Regexp
	}{
		{filepath.Join("..", "prometheus", "rules.yaml"), regexp.MustCompile(`Dashboard: "([^"]+)"`)},
		{filepath.Join("..", "prometheus", "rules.yaml"), regexp.MustCompile(`(?:and|, then) "([^"]+)"`)},
		{filepath.Join("..", "..", "docs", "runbooks.md"), regexp.MustCompile(`\*\*([A-Z][^*]+)\*\*`)},
	} {
		src, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range f.re.FindAllStringSubmatch(string(src), -1) {
			named = append(named, strings.Join(strings.Fields(m[1]), " "))
		}
	}
	for _, n := range named {
		if strings.HasSuffix(n, ":") || strings.HasSuffix(n, ".") || n == "Means" || n == "Confirm" || n == "Do" || n == "Dashboard" || n == "Metrics" || n == "Traces" || n == "Logs" {
			continue // runbook headings, not panels
		}
		if !titles[n] {
			t.Errorf("%q is named by the rules or runbooks but is no panel", n)
		}
	}
	for _, want := range []string{"Traffic by route", "Errors by code", "Latency heatmap", "Latency by cache outcome",
		"Cache outcomes", "PMS attempts by outcome", "Breaker state", "Rate limiting and throttling", "Redis",
		"Error log lines", "Failed and slow traces"} {
		if !titles[want] {
			t.Errorf("no panel %q", want)
		}
	}
	if n := strings.Count(string(b), `"queryType": "traceql"`); n < 5 {
		t.Errorf("%d links or queries to traces, want at least 5", n)
	}
}

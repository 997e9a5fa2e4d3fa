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
// the dashboard covers what docs/operations.md ("Production kit") lists: traffic, errors by code, latency
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

// docs/contract.md section 18: every Prometheus query filters by the job variable
// (two deployments sharing a Prometheus never mix on a panel), and by
// instance except the SLO panels' recorded series, which keep only job;
// the job and instance variables are what github.com/grafana/dashboard-linter
// asks (multi, all = .+, on the Prometheus data source variable). The
// linter itself cannot be had from the module proxy, so CI holds these of
// its rules here; .lint beside the dashboard justifies its other findings.
func TestDashboardFiltersByJob(t *testing.T) {
	b, err := grafana.Dashboard()
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Editable   bool
		Templating struct {
			List []struct {
				Name, Type, Label, AllValue string
				Query                       any
				Multi                       bool
				Datasource                  *struct{ UID string }
			}
		}
		Panels []struct {
			Title      string
			Datasource *struct{ Type string }
			Targets    []struct {
				Expr       string
				Datasource *struct{ Type string }
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	vars := map[string]int{}
	for i, v := range d.Templating.List {
		vars[v.Name] = i
	}
	for _, name := range []string{"job", "instance"} {
		i, ok := vars[name]
		if !ok {
			t.Fatalf("no %s variable", name)
		}
		v := d.Templating.List[i]
		if v.Type != "query" || !v.Multi || v.AllValue != ".+" || v.Datasource == nil || v.Datasource.UID != "${prometheus_datasource}" {
			t.Errorf("%s variable %+v", name, v)
		}
	}
	if q, _ := d.Templating.List[vars["instance"]].Query.(string); !strings.Contains(q, `job=~"$job"`) {
		t.Errorf("the instance variable lists instances of every job: %q", q)
	}
	if d.Editable {
		t.Error("the provisioned dashboard is editable")
	}
	queries, titles := 0, map[string]bool{}
	for _, p := range d.Panels {
		titles[p.Title] = true
		if p.Datasource == nil || p.Datasource.Type != "prometheus" {
			continue
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.Expr == "0.999" {
				continue
			}
			queries++
			if !strings.Contains(tg.Expr, `job=~"$job"`) {
				t.Errorf("%s: %s does not filter by job", p.Title, tg.Expr)
			}
			if !strings.HasPrefix(p.Title, "SLO:") && !strings.Contains(tg.Expr, `instance=~"$instance"`) {
				t.Errorf("%s: %s does not filter by instance", p.Title, tg.Expr)
			}
		}
	}
	if queries < 25 {
		t.Errorf("%d Prometheus queries checked", queries)
	}
	for _, want := range []string{"Shadow differences", "Shadow walks and last comparison", "Dropped log lines"} {
		if !titles[want] {
			t.Errorf("no panel %q", want)
		}
	}
}

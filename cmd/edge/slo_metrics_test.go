package main

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	promql "github.com/prometheus/prometheus/promql/parser"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// targetLabels are added by Prometheus when it scrapes (the target's), so
// they are never in /metrics itself; rules and the dashboard may use them.
var targetLabels = []string{"instance", "job"}

// exposition is the series of one scrape: metric name to label sets.
type exposition map[string][]labels.Labels

func parseExposition(t *testing.T, body string) exposition {
	t.Helper()
	p := promql.NewParser(promql.Options{})
	e := exposition{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series := line[:strings.LastIndexByte(line, ' ')]
		ls, err := p.ParseMetric(series)
		if err != nil {
			t.Fatalf("scrape line %q: %v", line, err)
		}
		name := ls.Get(model.MetricNameLabel)
		e[name] = append(e[name], ls)
	}
	return e
}

// check reports what of one vector selector the scrape lacks: the metric,
// a label it names (matched or grouped by), or a value an equality or
// positive regex matcher asks for.
func (e exposition) check(sel *promql.VectorSelector, grouping []string, records map[string]bool) []string {
	if records[sel.Name] {
		return nil // a recording rule's output
	}
	series, ok := e[sel.Name]
	if !ok {
		return []string{"metric " + sel.Name + " not in /metrics"}
	}
	var missing []string
	has := func(name string) bool {
		for _, ls := range series {
			if ls.Has(name) {
				return true
			}
		}
		return slices.Contains(targetLabels, name)
	}
	for _, g := range grouping {
		if !has(g) {
			missing = append(missing, sel.Name+": no label "+g+" to group by")
		}
	}
	for _, m := range sel.LabelMatchers {
		if m.Name == model.MetricNameLabel || slices.Contains(targetLabels, m.Name) {
			continue
		}
		if !has(m.Name) {
			missing = append(missing, sel.Name+": no label "+m.Name)
			continue
		}
		if m.Type == labels.MatchNotEqual || m.Type == labels.MatchNotRegexp || m.Value == "" {
			continue
		}
		found := false
		for _, ls := range series {
			found = found || (ls.Has(m.Name) && m.Matches(ls.Get(m.Name)))
		}
		if !found {
			missing = append(missing, sel.Name+": no series with "+m.String())
		}
	}
	return missing
}

// checkExpr walks one PromQL expression; grouping labels (by, and
// histogram_quantile's le) are checked against every selector under them.
func (e exposition) checkExpr(expr string, records map[string]bool) ([]string, error) {
	node, err := promql.NewParser(promql.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var missing []string
	var walk func(n promql.Node, grouping []string)
	walk = func(n promql.Node, grouping []string) {
		switch n := n.(type) {
		case *promql.VectorSelector:
			missing = append(missing, e.check(n, grouping, records)...)
			return
		case *promql.AggregateExpr:
			if !n.Without {
				grouping = append(slices.Clone(grouping), n.Grouping...)
			}
		}
		for _, c := range promql.Children(n) {
			walk(c, grouping)
		}
	}
	walk(node, nil)
	return missing, nil
}

// docs/operations.md, "Production kit": every metric and label the alert rules and the
// dashboard use is in the /metrics of a running edge that served traffic
// (with Redis, a miss, a hit, errors, a throttled client), and, for the
// webhooks' series, of one that delivered an event (webhookExposition), so
// a renamed metric or label fails here.
func TestRulesAndDashboardMatchMetrics(t *testing.T) {
	redisSrv := redistest.Start(t)
	sim := pmsim.New(pmsim.Config{Seed: 3})
	pms := newHeldPMS(t, sim)
	simSrv := httptest.NewServer(sim) // the candidate
	defer simSrv.Close()
	keysFile, key := keystest.Live(t, "aurora")
	s := start(t, map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "127.0.0.1:0", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": pms.srv.URL, "EDGE_DOCS_URL": testDocsURL, "EDGE_CACHE_TTL": "1h", "EDGE_CACHE_STALE": "2h",
		"EDGE_PMS_ATTEMPT_TIMEOUT": "20s", "EDGE_PMS_TIMEOUT": "2s", // the first attempt is held until a get joins its walk
		"EDGE_REDIS_URL": redisSrv.URL(), "EDGE_AUTH_FAIL_LIMIT": "1",
		"EDGE_FLEET_SECRET": strings.Repeat("f", 32), // required with Redis
		"PMS_CANDIDATE_URL": simSrv.URL,              // the shadow's series (PartnerEdgeShadow*)
	})
	base := "http://" + waitListening(t, s) + "/v1/"
	waitHealthy(t, base)
	admin := waitAdmin(t, s.stderr)

	// A failing get (502, PMS 5xx and retries), a miss and a hit of the
	// list, a get from the cache, an unknown route, two bad keys and the
	// throttle's 429.
	sim.SetFaults(pmsim.Faults{ErrorRate: 1, ErrorStatus: 500})
	if code := pms.joinFirstWalk(t, admin, base+"properties/00000000-0000-4000-8000-000000000001", key); code != 502 {
		t.Fatalf("failing get: %d", code)
	}
	sim.Heal()
	testkit.Eventually(t, "the first walk's retry succeeds", func() bool { return strings.Contains(s.stderr.String(), `"msg":"pms walk finished"`) })
	for range 2 {
		if code := call(t, base+"properties", key); code != 200 {
			t.Fatalf("list: %d", code)
		}
	}
	if code := call(t, base+"nowhere", key); code != 404 {
		t.Fatalf("404: %d", code)
	}
	bad := "svc_live_" + strings.Repeat("x", 30)
	for _, want := range []int{401, 429} {
		if code := call(t, base+"properties", bad); code != want {
			t.Fatalf("bad key: %d, want %d", code, want)
		}
	}
	// The shadow compares in the background after the live walk.
	testkit.Eventually(t, "the shadow comparison is in the metrics", func() bool {
		return strings.Contains(scrape(t, admin+"/metrics"), "partner_edge_shadow_last_comparison_timestamp_seconds{")
	})
	exp := parseExposition(t, scrape(t, admin+"/metrics"))
	if len(exp["db_client_operation_duration_seconds_bucket"]) == 0 {
		t.Fatalf("no Redis command recorded: is the edge on Redis?")
	}
	// Webhook deliveries (docs/webhooks.md), from an edge that made one.
	for name, series := range webhookExposition(t) {
		exp[name] = append(exp[name], series...)
	}

	rgs, errs := rulefmt.ParseFile(filepath.Join("..", "..", "observability", "prometheus", "rules.yaml"),
		false, model.UTF8Validation, promql.NewParser(promql.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	records := map[string]bool{}
	var exprs []string
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				records[r.Record] = true
			}
			exprs = append(exprs, r.Expr)
		}
	}
	dashExprs := dashboardExprs(t, filepath.Join("..", "..", "observability", "grafana", "partner-edge.json"))
	if len(dashExprs) < 20 {
		t.Fatalf("only %d PromQL expressions in the dashboard", len(dashExprs))
	}
	// Grafana's variables, as Grafana would fill them in.
	fill := strings.NewReplacer("$__rate_interval", "5m", "$instance", ".+", "$job", ".+")
	for _, expr := range append(exprs, dashExprs...) {
		missing, err := exp.checkExpr(fill.Replace(expr), records)
		if err != nil {
			t.Errorf("PromQL does not parse: %v\n%s", err, expr)
			continue
		}
		for _, m := range missing {
			t.Errorf("%s\n  in: %s", m, strings.Join(strings.Fields(expr), " "))
		}
	}

	// docs/operations.md's "What to watch" names metrics an operator
	// alerts and looks at: each is in the running edge's scrape.
	watched := watchList(t, filepath.Join("..", "..", "docs", "operations.md"))
	if len(watched) < 9 {
		t.Fatalf("What to watch names only %d metrics: %v", len(watched), watched)
	}
	for _, name := range watched {
		if len(exp[name]) == 0 {
			t.Errorf("docs/operations.md, What to watch, names %s: not in the edge's /metrics", name)
		}
	}
}

// watchList is every partner_edge_* metric named in the "What to watch"
// section of the operations guide at path.
func watchList(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## What to watch\n")
	if !ok {
		t.Fatalf("%s has no section What to watch", path)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	seen := map[string]bool{}
	var out []string
	for _, m := range regexp.MustCompile("`(partner_edge_[a-z_]+)").FindAllStringSubmatch(section, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

// dashboardExprs are the Prometheus queries of every panel (Loki and Tempo
// queries are not PromQL).
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Datasource *struct{ Type string } `json:"datasource"`
		Targets    []struct {
			Expr       string                 `json:"expr"`
			Datasource *struct{ Type string } `json:"datasource"`
		} `json:"targets"`
	}
	var d struct{ Panels []panel }
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range d.Panels {
		if p.Datasource == nil || p.Datasource.Type != "prometheus" {
			continue
		}
		for _, tg := range p.Targets {
			if tg.Expr != "" && (tg.Datasource == nil || tg.Datasource.Type == "prometheus") {
				out = append(out, tg.Expr)
			}
		}
	}
	return out
}

package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// docTable reads the markdown table under heading (a "### " line) of
// docs/observability.md: its rows, each a list of cells, header and rule
// left out.
func docTable(t *testing.T, heading string) [][]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(doc), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/observability.md has no %q", heading)
	}
	if end := strings.Index(sec, "\n#"); end >= 0 {
		sec = sec[:end]
	}
	var rows [][]string
	header := true
	for l := range strings.SplitSeq(sec, "\n") {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		if header || strings.HasPrefix(l, "|---") {
			header = false
			continue
		}
		var cells []string
		for c := range strings.SplitSeq(strings.Trim(l, "|"), " | ") {
			cells = append(cells, strings.TrimSpace(c))
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		t.Fatalf("no table under %q", heading)
	}
	return rows
}

var backquoted = regexp.MustCompile("(operation|Min Duration|service)? ?`([^`]+)`")

// jaegerSearch is one search of Jaeger's UI as its query API takes it.
type jaegerSearch struct {
	service, operation, minDuration string
	tags                            map[string]string
}

// parseJaegerCell reads a cell of the "Finding traces" table: searches
// apart by ", or "; in each, operation `X`, Min Duration `X`, and tags
// `key=value` (bare, after "tags" or "process tag"), service `X` (default
// partner-edge); vars replace the
// placeholders a partner or an SRE fills in.
func parseJaegerCell(t *testing.T, cell string, vars map[string]string) []jaegerSearch {
	t.Helper()
	var out []jaegerSearch
	for alt := range strings.SplitSeq(cell, ", or ") {
		s := jaegerSearch{service: "partner-edge", tags: map[string]string{}}
		for _, m := range backquoted.FindAllStringSubmatch(alt, -1) {
			v := m[2]
			for ph, real := range vars {
				v = strings.ReplaceAll(v, ph, real)
			}
			switch m[1] {
			case "service":
				s.service = v
			case "operation":
				s.operation = v
			case "Min Duration":
				s.minDuration = v
			default:
				k, val, ok := strings.Cut(v, "=")
				if !ok {
					t.Fatalf("Jaeger search %q: %q is not key=value", cell, v)
				}
				s.tags[k] = val
			}
		}
		out = append(out, s)
	}
	return out
}

// find runs s until its answer holds trace want (exports are batched).
func (j *jaeger) find(t *testing.T, s jaegerSearch, want string) bool {
	t.Helper()
	tags, _ := json.Marshal(s.tags)
	q := url.Values{"service": {s.service}, "lookback": {"1h"}, "limit": {"1000"}, "tags": {string(tags)}}
	if s.operation != "" {
		q.Set("operation", s.operation)
	}
	if s.minDuration != "" {
		q.Set("minDuration", s.minDuration)
	}
	deadline := time.Now().Add(testkit.EventuallyTimeout)
	for time.Now().Before(deadline) {
		for _, tr := range j.get(t, "/api/traces?"+q.Encode()) {
			if tr.TraceID == want {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond) // poll: the exporters' batches are the outside event
	}
	return false
}

// TestJaegerDocumentedSearches (docs/observability.md, "Finding
// traces"): every Jaeger search of the table, run against a real Jaeger
// v2 (the local stack's configuration), returns the trace it names. The
// edges run at ratio 0 (only the edge's own rules keep a trace): a first
// load that fails (a 502, BAD_GATEWAY, kept by the error rule: the PMS
// fails from the start, so the walk it waits for fails), a refresh on the
// clock whose first attempt is retried and whose walk rejects records, a
// partner's request with a sampled traceparent (kept by the parent-based
// sampler), and on an edge with EDGE_CACHE_TTL=0 a slow request and a
// request whose PMS call others joined (kept for their links to it). A
// row the test has no expectation for fails it: a search added to the
// table is run too.
func TestJaegerDocumentedSearches(t *testing.T) {
	j, simTel := jaegerStack(t)
	ratio0 := map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}
	withEnv := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for _, m := range []map[string]string{ratio0, extra} {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}
	// A failed walk: every attempt answered 500, from the start-up walk on.
	e := startTraceEdgeOn(t, j, simTel, withEnv(map[string]string{"EDGE_CACHE_TTL": "1h", "EDGE_CACHE_STALE": "2h",
		"OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=edge-search-failing"}),
		func(sim *pmsim.Sim, pms http.Handler) string {
			sim.SetFaults(pmsim.Faults{ErrorRate: 1, ErrorStatus: 500})
			srv := httptest.NewServer(pms)
			t.Cleanup(srv.Close)
			return srv.URL
		})
	if code, _ := e.ask(t, "/v1/properties", e.key, "failed-walk"); code != 502 {
		t.Fatalf("failing first load: %d, want 502", code)
	}
	failed := e.line(t, "failed-walk")
	// A refresh on the clock whose first attempt fails (then a retry),
	// whose walk rejects the simulator's unmappable records.
	r := startTraceEdge(t, j, simTel, withEnv(map[string]string{"EDGE_CACHE_TTL": "1s", "EDGE_CACHE_STALE": "1h",
		"OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=edge-search-1"}))
	testkit.Eventually(t, "the start-up walk ended", func() bool {
		return strings.Contains(r.s.stderr.String(), `"msg":"pms walk finished"`)
	})
	r.sim.SetFaults(pmsim.Faults{FailFirst: 1, ErrorStatus: 500})
	walk := refreshOnTheClock(t, j, r, "edge-search-1", func(tr *jTrace) bool {
		return len(tr.spans("pms.walk")) == 1 && complete(tr, "pms.list_hotels") && strings.Contains(describe(tr), "pms.attempt=2")
	})
	firstWalk := walk.TraceID
	// A partner's request, kept by its sampled traceparent.
	if code := r.askTraced(t, "/v1/properties", "partner", sampledParent()); code != 200 {
		t.Fatalf("partner's request: %d", code)
	}
	first := r.line(t, "partner")
	// The failed walk: the trace the failed request links to.
	walkOf := func(l map[string]any) string {
		tr := j.trace(t, l["trace_id"].(string), func(tr *jTrace) bool { return len(tr.Spans) > 0 })
		for _, s := range tr.Spans {
			for _, r := range s.References {
				if r.RefType == "FOLLOWS_FROM" && r.TraceID != tr.TraceID {
					return r.TraceID
				}
			}
		}
		t.Fatalf("%s links to no walk:\n%s", l["correlation_id"], describe(tr))
		return ""
	}
	failedWalk := walkOf(failed)

	// A slow request (the PMS takes longer than EDGE_TRACE_SLOW, 1s).
	z := startTraceEdge(t, j, simTel, withEnv(map[string]string{"EDGE_CACHE_TTL": "0",
		"OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=edge-search-2"}))
	_, body := z.ask(t, "/v1/properties", z.key, "ids")
	m := propertyID.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no property id in %s", body)
	}
	// A request whose PMS call a follower joined (with a sampled
	// traceparent): kept for the follower's link to it.
	leader, _ := coalesce(t, z, "/v1/properties/"+m[1], "kept", 1, 800*time.Millisecond)
	linked := z.line(t, leader)
	z.sim.SetFaults(pmsim.Faults{Latency: 1200 * time.Millisecond})
	if code, _ := z.ask(t, "/v1/properties/"+m[1], z.key, "slow"); code != 200 {
		t.Fatalf("slow get: %d", code)
	}
	slow := z.line(t, "slow")

	tid := func(l map[string]any) string { return l["trace_id"].(string) }
	want := map[string]string{
		"a partner's request":                    tid(first),
		"a problem code":                         tid(failed),
		"errors kept by the tail rule":           tid(failed),
		"slow requests":                          tid(slow),
		"requests kept for a link to them":       tid(linked),
		"failed walks":                           failedWalk,
		"walks that rejected records, by reason": firstWalk,
		"retried attempts":                       firstWalk,
		"one instance":                           tid(first),
	}
	vars := map[string]string{"req_...": first["request_id"].(string), "<pod>": "edge-search-1"}
	var seen []string
	for _, row := range docTable(t, "### Finding traces") {
		name, cell := row[0], row[1]
		seen = append(seen, name)
		trace, ok := want[name]
		if !ok {
			t.Errorf("docs/observability.md searches for %q (%s): the test does not know which trace that is", name, cell)
			continue
		}
		for _, s := range parseJaegerCell(t, cell, vars) {
			if !j.find(t, s, trace) {
				t.Errorf("%s: Jaeger search %+v does not return trace %s", name, s, trace)
			}
		}
	}
	for name := range want {
		if !slices.Contains(seen, name) {
			t.Errorf("the table has no row %q", name)
		}
	}
}

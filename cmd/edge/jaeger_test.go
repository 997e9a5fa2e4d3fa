package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// jaegerBinary is the Jaeger v2 all-in-one .ci/run builds from its own
// module (.ci/jaeger), so that this module does not carry Jaeger's
// dependencies; PARTNER_EDGE_JAEGER names another.
func jaegerBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv("PARTNER_EDGE_JAEGER")
	if p == "" {
		p, _ = filepath.Abs(filepath.Join("..", "..", ".ci", "jaeger", "bin", "jaeger"))
	}
	if _, err := os.Stat(p); err != nil {
		const how = "build it: (cd .ci/jaeger && go build -o bin/jaeger github.com/jaegertracing/jaeger/cmd/jaeger) (.ci/run does)"
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Jaeger at %s: %s", p, how)
		}
		t.Skipf("no Jaeger at %s: %s", p, how)
	}
	return p
}

// jaeger is a running Jaeger v2: OTLP/HTTP in, the query API out.
type jaeger struct {
	otlp, query string
}

// startJaeger starts Jaeger on the local stack's configuration
// (docs/deploy/observability/jaeger.yaml: in-memory storage), its ports on
// loopback, and waits until its query API answers.
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := jaegerBinary(t)
	cfg, _ := filepath.Abs(filepath.Join("..", "..", "docs", "deploy", "observability", "jaeger.yaml"))
	j := &jaeger{otlp: freePort(t), query: freePort(t)}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config", cfg)
	cmd.Env = append(os.Environ(), "JAEGER_OTLP_HTTP="+j.otlp, "JAEGER_QUERY_HTTP="+j.query,
		"JAEGER_OTLP_GRPC="+freePort(t), "JAEGER_QUERY_GRPC="+freePort(t))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("Jaeger's log:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(testkit.EventuallyTimeout)
	for time.Now().Before(deadline) {
		if res, err := http.Get("http://" + j.query + "/api/services"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return j
			}
		}
		time.Sleep(100 * time.Millisecond) // poll: Jaeger starting is the outside event
	}
	t.Fatalf("Jaeger's query API did not answer within 60 s:\n%s", out.String())
	return nil
}

// The query API's JSON (Jaeger's UI model): links are FOLLOWS_FROM
// references, the parent a CHILD_OF one.
type jTrace struct {
	TraceID   string `json:"traceID"`
	Spans     []jSpan
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
		Tags        []jTag
	}
}

type jSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	}
	Tags      []jTag
	Logs      []struct{ Fields []jTag }
	ProcessID string `json:"processID"`
	service   string
}

type jTag struct {
	Key   string
	Value any
}

func (s jSpan) tag(k string) string {
	for _, t := range s.Tags {
		if t.Key == k {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

func (s jSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" && r.TraceID == s.TraceID {
			return r.SpanID
		}
	}
	return ""
}

// linksTo reports whether s links to span id of trace tid.
func (s jSpan) linksTo(tid, id string) bool {
	for _, r := range s.References {
		if r.RefType == "FOLLOWS_FROM" && r.TraceID == tid && r.SpanID == id {
			return true
		}
	}
	return false
}

func (s jSpan) events() []string {
	var out []string
	for _, l := range s.Logs {
		for _, f := range l.Fields {
			if f.Key == "event" {
				out = append(out, fmt.Sprint(f.Value))
			}
		}
	}
	return out
}

func (tr *jTrace) spans(op string) []jSpan {
	var out []jSpan
	for _, s := range tr.Spans {
		if op == "" || s.OperationName == op {
			out = append(out, s)
		}
	}
	return out
}

func (tr *jTrace) byID(id string) (jSpan, bool) {
	for _, s := range tr.Spans {
		if s.SpanID == id {
			return s, true
		}
	}
	return jSpan{}, false
}

func (j *jaeger) get(t *testing.T, path string) []jTrace {
	t.Helper()
	res, err := http.Get("http://" + j.query + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode == 404 {
		return nil
	}
	var ans struct{ Data []jTrace }
	if err := json.NewDecoder(res.Body).Decode(&ans); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for i := range ans.Data {
		for k := range ans.Data[i].Spans {
			s := &ans.Data[i].Spans[k]
			s.service = ans.Data[i].Processes[s.ProcessID].ServiceName
		}
	}
	return ans.Data
}

// trace waits until Jaeger holds trace id with ok true of it, and returns
// it (the spans arrive in batches, the edge's and the simulator's apart).
func (j *jaeger) trace(t *testing.T, id string, ok func(*jTrace) bool) *jTrace {
	t.Helper()
	deadline := time.Now().Add(testkit.EventuallyTimeout)
	var last *jTrace
	for time.Now().Before(deadline) {
		if d := j.get(t, "/api/traces/"+id); len(d) == 1 {
			last = &d[0]
			if ok(last) {
				return last
			}
		}
		time.Sleep(100 * time.Millisecond) // poll: the exporters' batches are the outside event
	}
	if last == nil {
		t.Fatalf("Jaeger holds no trace %s", id)
	}
	t.Fatalf("trace %s never complete: %s", id, describe(last))
	return nil
}

// complete reports whether every attempt's client span under call (a
// pms.* span) has the simulator's server span beneath it, and there is at
// least one.
func complete(tr *jTrace, call string) bool {
	calls := tr.spans(call)
	if len(calls) != 1 {
		return false
	}
	n := 0
	for _, a := range tr.Spans {
		if a.parent() != calls[0].SpanID || a.service != "partner-edge" {
			continue
		}
		n++
		var served bool
		for _, s := range tr.Spans {
			served = served || (s.service == "pmsim" && s.parent() == a.SpanID)
		}
		if !served {
			return false
		}
	}
	return n > 0
}

// has reports whether Jaeger holds any span of trace id now.
func (j *jaeger) has(t *testing.T, id string, service string) bool {
	for _, tr := range j.get(t, "/api/traces/"+id) {
		for _, s := range tr.Spans {
			if s.service == service {
				return true
			}
		}
	}
	return false
}

// describe draws a trace as an indented tree (children in a fixed order,
// repeated events counted), with the attributes an SRE reads first: the
// trees docs/observability.md shows are these (TestJaegerTraceTrees
// checks that they are there).
func describe(tr *jTrace) string {
	var b strings.Builder
	kids := map[string][]jSpan{}
	var roots []jSpan
	for _, s := range tr.Spans {
		if p := s.parent(); p != "" {
			if _, ok := tr.byID(p); ok {
				kids[p] = append(kids[p], s)
				continue
			}
		}
		roots = append(roots, s)
	}
	order := func(l []jSpan) {
		slices.SortFunc(l, func(a, b jSpan) int {
			key := func(s jSpan) string {
				return s.OperationName + s.service + s.tag("partner_edge.pms.attempt") + s.tag("http.response.status_code")
			}
			return strings.Compare(key(a), key(b))
		})
	}
	order(roots)
	var walk func(s jSpan, depth int)
	walk = func(s jSpan, depth int) {
		fmt.Fprintf(&b, "%s%s (%s)", strings.Repeat("  ", depth), s.OperationName, s.service)
		for _, k := range []string{"http.response.status_code", "partner_edge.cache.outcome", "partner_edge.problem.code",
			"partner_edge.trace.kept_by", "partner_edge.walk.kind", "partner_edge.pms.attempt"} {
			if v := s.tag(k); v != "" && !(k == "http.response.status_code" && s.service == "pmsim") {
				fmt.Fprintf(&b, " %s=%s", strings.TrimPrefix(k, "partner_edge."), v)
			}
		}
		links := 0
		for _, r := range s.References {
			if r.RefType == "FOLLOWS_FROM" {
				links++
			}
		}
		if links > 0 {
			fmt.Fprintf(&b, " links=%d", links)
		}
		counts := map[string]int{}
		var names []string
		for _, e := range s.events() {
			if counts[e] == 0 {
				names = append(names, e)
			}
			counts[e]++
		}
		slices.Sort(names)
		for _, n := range names {
			fmt.Fprintf(&b, " event:%s", n)
			if counts[n] > 1 {
				fmt.Fprintf(&b, "x%d", counts[n])
			}
		}
		b.WriteString("\n")
		k := kids[s.SpanID]
		order(k)
		for _, c := range k {
			walk(c, depth+1)
		}
	}
	for _, r := range roots {
		walk(r, 0)
	}
	return b.String()
}

// documented collects the trees the test captured, by name, and checks at
// the end that docs/observability.md shows each.
type documented map[string]string

func (d documented) check(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(maps.Keys(d))
	for _, name := range names {
		if !strings.Contains(string(doc), d[name]) {
			t.Errorf("docs/observability.md does not show the tree of %s as captured:\n%s", name, d[name])
		}
	}
}

// accessLines are the edge's access-log lines (stdout) by correlation id.
func accessLines(t *testing.T, stdout string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil || m["msg"] != "request" {
			continue
		}
		if c, ok := m["correlation_id"].(string); ok {
			out[c] = m
		}
	}
	return out
}

// traceEdge is an edge exporting to a Jaeger, with its simulator.
type traceEdge struct {
	s    *started
	sim  *pmsim.Sim
	base string
	key  string
}

func startTraceEdge(t *testing.T, j *jaeger, simTel *observability.Telemetry, env map[string]string) *traceEdge {
	t.Helper()
	return startTraceEdgeOn(t, j, simTel, env, func(_ *pmsim.Sim, pms http.Handler) string {
		srv := httptest.NewServer(pms)
		t.Cleanup(srv.Close)
		return srv.URL
	})
}

// startTraceEdgeOn is startTraceEdge with the PMS set up by serve before
// the edge starts, and walks it at start-up (docs/contract.md section
// 22): serve gets the simulator and its instrumented handler (to fail
// from the start, or hold the first walk: heldPMS) and returns the URL the
// edge calls.
func startTraceEdgeOn(t *testing.T, j *jaeger, simTel *observability.Telemetry, env map[string]string,
	serve func(sim *pmsim.Sim, pms http.Handler) string) *traceEdge {
	t.Helper()
	sim := pmsim.New(pmsim.Config{Seed: 3})
	pmsURL := serve(sim, pmsim.Instrument(sim, simTel))
	keysFile, key := keystest.Live(t, "aurora")
	all := map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "off", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": pmsURL, "EDGE_DOCS_URL": testDocsURL,
		"EDGE_PMS_ATTEMPT_TIMEOUT": "2s", "EDGE_PMS_TIMEOUT": "5s",
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + j.otlp, "OTEL_METRICS_EXPORTER": "none",
	}
	for k, v := range env {
		all[k] = v
	}
	s := start(t, all)
	e := &traceEdge{s: s, sim: sim, base: "http://" + waitListening(t, s), key: key}
	waitHealthy(t, e.base+"/v1/")
	return e
}

// ask sends GET path with a correlation id and answers the status and body.
func (e *traceEdge) ask(t *testing.T, path, key, corr string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Svc-Correlation-Id", corr)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// line waits for the access line of corr (the log is buffered, flushed
// every second).
func (e *traceEdge) line(t *testing.T, corr string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(testkit.EventuallyTimeout)
	for time.Now().Before(deadline) {
		if l, ok := accessLines(t, e.s.stdout.String())[corr]; ok {
			return l
		}
		time.Sleep(50 * time.Millisecond) // poll: the log buffer's flush is the outside event
	}
	t.Fatalf("no access line with correlation id %s", corr)
	return nil
}

// refreshOnTheClock waits until e's start-up walk has ended, then, with
// no request at all, until Jaeger holds a walk of kind refresh of
// instance (service.instance.id) for which done is true: the walk on the
// clock that refreshes the snapshot EDGE_CACHE_TTL after the previous
// walk ended, started by no request (docs/contract.md section 24). It
// returns that walk's trace.
func refreshOnTheClock(t *testing.T, j *jaeger, e *traceEdge, instance string, done func(*jTrace) bool) *jTrace {
	t.Helper()
	testkit.Eventually(t, "the start-up walk ended", func() bool {
		return strings.Contains(e.s.stderr.String(), `"msg":"pms walk finished"`)
	})
	q := url.Values{"service": {"partner-edge"}, "operation": {"pms.walk"}, "lookback": {"1h"}, "limit": {"100"},
		"tags": {`{"partner_edge.walk.kind":"refresh","service.instance.id":"` + instance + `"}`}}
	var walk *jTrace
	testkit.Eventually(t, "Jaeger holds a refresh walk on the clock", func() bool {
		for _, tr := range j.get(t, "/api/traces?"+q.Encode()) {
			if done(&tr) {
				walk = &tr
				return true
			}
		}
		return false
	})
	if root := walk.spans("pms.walk"); len(root) != 1 {
		t.Fatalf("refresh walk:\n%s", describe(walk))
	}
	return walk
}

var propertyID = regexp.MustCompile(`"id":"([0-9a-f-]{36})"`)

// jaegerStack starts Jaeger, points the process's exporters at it (the
// exporters, autoexport and the batch processor, read the process's
// environment) and makes the simulator's telemetry, exporting there too.
func jaegerStack(t *testing.T) (*jaeger, *observability.Telemetry) {
	t.Helper()
	j := startJaeger(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+j.otlp)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	simTel, err := observability.New(context.Background(), observability.Config{ServiceName: "pmsim",
		Getenv: func(k string) string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + j.otlp, "OTEL_METRICS_EXPORTER": "none"}[k]
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = simTel.Shutdown(context.Background()) })
	return j, simTel
}

// TestJaegerTraceTrees (docs/contract.md section 20; the trees
// docs/observability.md shows): a real Jaeger v2 beside the edge and the
// simulator, both exporting to it; asserted through Jaeger's query API.
func TestJaegerTraceTrees(t *testing.T) {
	j, simTel := jaegerStack(t)
	trees := documented{}
	ok1 := t.Run("ratio 1", func(t *testing.T) { traceTreesAtRatio1(t, j, simTel, trees) })
	ok0 := t.Run("ratio 0", func(t *testing.T) { traceTreesAtRatio0(t, j, simTel, trees) })
	t.Run("ratio 0.01", func(t *testing.T) { tracesAtRatio001(t, j, simTel) })
	t.Run("metrics to a traces-only backend", func(t *testing.T) { metricsRefused(t, j, simTel) })
	if ok1 && ok0 {
		trees.check(t)
	}
}

func traceTreesAtRatio1(t *testing.T, j *jaeger, simTel *observability.Telemetry, trees documented) {
	// The first load is the walk the edge starts at start-up (docs/contract.md
	// section 22); the PMS holds its first attempt until a request waits
	// for it, then fails that attempt once.
	var pms *heldPMS
	e := startTraceEdgeOn(t, j, simTel, map[string]string{"EDGE_CACHE_TTL": "1h", "EDGE_CACHE_STALE": "2h",
		"EDGE_ADMIN_ADDR":          "127.0.0.1:0", // the request in flight, for joinFirstWalk
		"EDGE_PMS_ATTEMPT_TIMEOUT": "20s",         // the held attempt is answered, not timed out
		"OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=edge-ratio-1"},
		func(sim *pmsim.Sim, h http.Handler) string {
			sim.SetFaults(pmsim.Faults{FailFirst: 1, ErrorStatus: 500})
			pms = newHeldPMS(t, h)
			return pms.srv.URL
		})

	// A first load whose first attempt fails: a request that arrives while
	// the start-up walk runs waits for it (coalesced) and links to it, a
	// trace of its own, started by no request: it links to none. The
	// attempts are client spans under pms.list_hotels, the simulator's
	// server spans under them.
	joiner, _ := http.NewRequest("GET", e.base+"/v1/properties", nil)
	joiner.Header.Set("Authorization", "Bearer "+e.key)
	joiner.Header.Set("Svc-Correlation-Id", "first-load")
	if code := pms.join(t, waitAdmin(t, e.s.stderr), joiner); code != 200 {
		t.Fatalf("first load: %d", code)
	}
	first := e.line(t, "first-load")
	if first["trace_sampled"] != true || first["cache"] != "coalesced" {
		t.Errorf("first load's access line: %v, want trace_sampled true, cache coalesced", first)
	}
	tid := first["trace_id"].(string)
	req := j.trace(t, tid, func(tr *jTrace) bool { return len(tr.spans("GET /v1/properties")) == 1 })
	server := req.spans("GET /v1/properties")[0]
	var walkTrace, walkSpan string
	for _, r := range server.References {
		if r.RefType == "FOLLOWS_FROM" && r.TraceID != tid {
			walkTrace, walkSpan = r.TraceID, r.SpanID
		}
	}
	if walkTrace == "" {
		t.Fatalf("the first load's request links to no walk:\n%s", describe(req))
	}
	walk := j.trace(t, walkTrace, func(tr *jTrace) bool {
		n := 0
		for _, s := range tr.Spans {
			if s.service == "pmsim" {
				n++
			}
		}
		return len(tr.spans("pms.walk")) == 1 && n >= 2
	})
	trees["a first load: the request"], trees["a first load: its walk"] = describe(req), describe(walk)
	root := walk.spans("pms.walk")[0]
	if root.SpanID != walkSpan || root.parent() != "" {
		t.Errorf("pms.walk: %+v, want the root %s the request links to", root, walkSpan)
	}
	for _, r := range root.References {
		if r.RefType == "FOLLOWS_FROM" {
			t.Errorf("the start-up walk links to %s/%s: no request started it", r.TraceID, r.SpanID)
		}
	}
	if root.tag("partner_edge.walk.kind") != "first_load" {
		t.Errorf("walk kind %q, want first_load", root.tag("partner_edge.walk.kind"))
	}
	list := walk.spans("pms.list_hotels")
	if len(list) != 1 || list[0].parent() != root.SpanID {
		t.Fatalf("pms.list_hotels is not beneath the walk:\n%s", describe(walk))
	}
	if !strings.Contains(strings.Join(list[0].events(), ","), "pms.retry") {
		t.Errorf("pms.list_hotels events %v, want pms.retry", list[0].events())
	}
	attempts := map[string]bool{}
	for _, s := range walk.Spans {
		if s.service == "partner-edge" && s.parent() == list[0].SpanID && strings.HasPrefix(s.OperationName, "GET") {
			attempts[s.tag("partner_edge.pms.attempt")] = true
		}
	}
	if !attempts["1"] || !attempts["2"] {
		t.Errorf("attempt spans %v, want attempts 1 and 2", attempts)
	}
	for _, s := range walk.Spans {
		if s.service != "pmsim" {
			continue
		}
		p, ok := walk.byID(s.parent())
		if !ok || p.service != "partner-edge" || p.parent() != list[0].SpanID {
			t.Errorf("simulator span %s is not under an attempt's client span", s.OperationName)
		}
	}

	// The resource tells the instance and the brand.
	proc := req.Processes[server.ProcessID]
	res := map[string]string{}
	for _, tag := range proc.Tags {
		res[tag.Key] = fmt.Sprint(tag.Value)
	}
	if res["service.instance.id"] != "edge-ratio-1" || res["partner_edge.brand"] != "aurora" {
		t.Errorf("resource %v: want service.instance.id edge-ratio-1, partner_edge.brand aurora", res)
	}

	// A cached hit: one server span.
	if code, _ := e.ask(t, "/v1/properties", e.key, "hit"); code != 200 {
		t.Fatalf("hit: %d", code)
	}
	hit := e.line(t, "hit")
	tr := j.trace(t, hit["trace_id"].(string), func(tr *jTrace) bool { return len(tr.Spans) >= 1 })
	trees["cached hit"] = describe(tr)
	if len(tr.Spans) != 1 || tr.Spans[0].tag("partner_edge.cache.outcome") != "hit" {
		t.Errorf("cached hit:\n%s want one server span, cache outcome hit", describe(tr))
	}
	if _, ok := hit["cache"]; ok {
		t.Errorf("a hit's access line names the cache: %v", hit)
	}

	// A 4xx refusal: the server span, with the problem code.
	if code, _ := e.ask(t, "/v1/properties", "svc_live_"+strings.Repeat("x", 30), "refusal"); code != 401 {
		t.Fatalf("refusal: %d", code)
	}
	ref := e.line(t, "refusal")
	tr = j.trace(t, ref["trace_id"].(string), func(tr *jTrace) bool { return len(tr.Spans) >= 1 })
	trees["4xx refusal"] = describe(tr)
	if tr.Spans[0].tag("partner_edge.problem.code") == "" || tr.Spans[0].tag("http.response.status_code") != "401" {
		t.Errorf("refusal's span tags %v", tr.Spans[0].Tags)
	}

	// /v1/health is not traced.
	if res, err := http.Get(e.base + "/v1/health"); err == nil {
		res.Body.Close()
	}
	for _, tr := range j.get(t, "/api/traces?service=partner-edge&limit=1000&lookback=1h") {
		for _, s := range tr.Spans {
			if strings.Contains(s.OperationName, "/v1/health") {
				t.Errorf("/v1/health traced: %s", s.OperationName)
			}
		}
	}

	// A refresh: the walk on the clock, EDGE_CACHE_TTL after the previous
	// one ended, started by no request (docs/contract.md section 24): a
	// root of kind refresh that links to no request. A request meanwhile
	// is answered from the held snapshot (a hit) and links to no walk.
	r := startTraceEdge(t, j, simTel, map[string]string{"EDGE_CACHE_TTL": "1s", "EDGE_CACHE_STALE": "1h",
		"OTEL_RESOURCE_ATTRIBUTES": "service.instance.id=edge-ratio-1-refresh"})
	refresh := refreshOnTheClock(t, j, r, "edge-ratio-1-refresh", func(tr *jTrace) bool {
		return len(tr.spans("pms.walk")) == 1 && complete(tr, "pms.list_hotels")
	})
	trees["a refresh: its walk"] = describe(refresh)
	root = refresh.spans("pms.walk")[0]
	if root.parent() != "" || root.tag("partner_edge.walk.kind") != "refresh" || len(root.References) != 0 {
		t.Errorf("the refresh's walk:\n%s want a root of kind refresh, linked to no request", describe(refresh))
	}
	if code, _ := r.ask(t, "/v1/properties", r.key, "refresh-hit"); code != 200 {
		t.Fatalf("hit: %d", code)
	}
	hitLine := r.line(t, "refresh-hit")
	req = j.trace(t, hitLine["trace_id"].(string), func(tr *jTrace) bool { return len(tr.spans("GET /v1/properties")) == 1 })
	if server = req.spans("GET /v1/properties")[0]; len(server.References) != 0 || server.tag("partner_edge.cache.outcome") != "hit" {
		t.Errorf("a request while walks follow the clock:\n%s want a hit linked to no walk", describe(req))
	}
}

func traceTreesAtRatio0(t *testing.T, j *jaeger, simTel *observability.Telemetry, trees documented) {
	e := startTraceEdge(t, j, simTel, map[string]string{"EDGE_CACHE_TTL": "0", "EDGE_TRACE_SLOW": "300ms",
		"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"})
	_, body := e.ask(t, "/v1/properties", e.key, "ids")
	m := propertyID.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no property id in %s", body)
	}
	path := "/v1/properties/" + m[1]

	// A 200 at ratio 0 is not kept.
	if code, _ := e.ask(t, path, e.key, "ok"); code != 200 {
		t.Fatalf("get: %d", code)
	}
	ok := e.line(t, "ok")
	if ok["trace_sampled"] != false {
		t.Errorf("a 200 at ratio 0: trace_sampled %v", ok["trace_sampled"])
	}

	// A 502 at ratio 0 is kept, whole: the edge's spans and the simulator's.
	e.sim.SetFaults(pmsim.Faults{ErrorRate: 1, ErrorStatus: 500})
	if code, _ := e.ask(t, path, e.key, "bad-gateway"); code != 502 {
		t.Fatalf("failing get: %d", code)
	}
	bg := e.line(t, "bad-gateway")
	if bg["trace_sampled"] != true {
		t.Errorf("a 502 at ratio 0: trace_sampled %v", bg["trace_sampled"])
	}
	tr := j.trace(t, bg["trace_id"].(string), func(tr *jTrace) bool {
		return len(tr.spans("GET /v1/properties/{propertyId}")) == 1 && complete(tr, "pms.get_hotel")
	})
	trees["502 at ratio 0"] = describe(tr)
	srv := tr.spans("GET /v1/properties/{propertyId}")[0]
	if srv.tag("partner_edge.trace.kept_by") != "error" || srv.SpanID != bg["span_id"] {
		t.Errorf("502's server span: kept_by %q, span id %s (log: %v)", srv.tag("partner_edge.trace.kept_by"), srv.SpanID, bg["span_id"])
	}
	get := tr.spans("pms.get_hotel")
	if len(get) != 1 || get[0].parent() != srv.SpanID {
		t.Fatalf("no pms.get_hotel under the server span:\n%s", describe(tr))
	}
	for _, s := range tr.Spans {
		if s.service == "pmsim" {
			if p, ok := tr.byID(s.parent()); !ok || p.parent() != get[0].SpanID {
				t.Errorf("simulator span not under an attempt:\n%s", describe(tr))
			}
		}
	}

	// A slow answer at ratio 0 is kept.
	e.sim.SetFaults(pmsim.Faults{Latency: 400 * time.Millisecond})
	if code, _ := e.ask(t, path, e.key, "slow"); code != 200 {
		t.Fatalf("slow get: %d", code)
	}
	slow := e.line(t, "slow")
	tr = j.trace(t, slow["trace_id"].(string), func(tr *jTrace) bool {
		return len(tr.spans("GET /v1/properties/{propertyId}")) == 1 && len(tr.spans("pms.get_hotel")) == 1
	})
	trees["slow 200 at ratio 0"] = describe(tr)
	if slow["trace_sampled"] != true || tr.spans("GET /v1/properties/{propertyId}")[0].tag("partner_edge.trace.kept_by") != "slow" {
		t.Errorf("slow request: trace_sampled %v, kept_by %q", slow["trace_sampled"], tr.spans("GET /v1/properties/{propertyId}")[0].tag("partner_edge.trace.kept_by"))
	}

	// The breaker opens: the call span says so, and no attempt is made.
	e.sim.SetFaults(pmsim.Faults{ErrorRate: 1, ErrorStatus: 500})
	var open map[string]any
	for i := range 10 {
		corr := fmt.Sprintf("breaker-%d", i)
		if code, _ := e.ask(t, path, e.key, corr); code == 503 {
			open = e.line(t, corr)
			break
		}
	}
	if open == nil {
		t.Fatal("the breaker never opened")
	}
	tr = j.trace(t, open["trace_id"].(string), func(tr *jTrace) bool { return len(tr.spans("pms.get_hotel")) == 1 })
	trees["breaker open"] = describe(tr)
	call := tr.spans("pms.get_hotel")[0]
	if !strings.Contains(strings.Join(call.events(), ","), "breaker.rejected") || len(tr.Spans) != 2 {
		t.Errorf("breaker open:\n%s want the server span and pms.get_hotel with breaker.rejected, no attempt", describe(tr))
	}

	// By now the 200's spans would have reached Jaeger: none did.
	if j.has(t, ok["trace_id"].(string), "partner-edge") {
		t.Errorf("the 200 at ratio 0 was kept")
	}
}

func tracesAtRatio001(t *testing.T, j *jaeger, simTel *observability.Telemetry) {
	e := startTraceEdge(t, j, simTel, map[string]string{"EDGE_CACHE_TTL": "0",
		"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.01"})
	_, body := e.ask(t, "/v1/properties", e.key, "ids-001")
	m := propertyID.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no property id in %s", body)
	}
	path := "/v1/properties/" + m[1]
	var oks, bads []string
	// 20 failing gets, each between two good ones: the breaker (5 in a
	// row, or half of the calls) stays closed.
	for i := 0; len(oks) < 200; i++ {
		if len(bads) < 20 && i%3 == 2 {
			e.sim.SetFaults(pmsim.Faults{ErrorRate: 1, ErrorStatus: 500})
			corr := fmt.Sprintf("bad-%d", i)
			if code, _ := e.ask(t, path, e.key, corr); code != 502 {
				t.Fatalf("failing get %d: %d", i, code)
			}
			e.sim.SetFaults(pmsim.Faults{})
			bads = append(bads, corr)
			continue
		}
		corr := fmt.Sprintf("ok-%d", i)
		if code, _ := e.ask(t, path, e.key, corr); code != 200 {
			t.Fatalf("get %d: %d", i, code)
		}
		oks = append(oks, corr)
	}
	for _, corr := range bads {
		l := e.line(t, corr)
		// Complete: the server span, the call, and under each attempt the
		// simulator's span (the retry budget may allow fewer than three).
		j.trace(t, l["trace_id"].(string), func(tr *jTrace) bool {
			return len(tr.spans("GET /v1/properties/{propertyId}")) == 1 && complete(tr, "pms.get_hotel")
		})
	}
	// Every request's access line, then every trace it says was sampled
	// held by Jaeger (the exporter's last batch landing is the outside
	// event); a trace not sampled was never exported, so none can land late.
	lines := map[string]map[string]any{}
	for _, corr := range append(append([]string{}, oks...), bads...) {
		lines[corr] = e.line(t, corr)
	}
	held := map[string]bool{}
	testkit.Eventually(t, "Jaeger holds every trace the access log says was sampled", func() bool {
		clear(held)
		for _, tr := range j.get(t, "/api/traces?service=partner-edge&limit=5000&lookback=1h") {
			for _, s := range tr.Spans {
				if s.service == "partner-edge" && s.OperationName == "GET /v1/properties/{propertyId}" {
					held[tr.TraceID] = true
				}
			}
		}
		for _, l := range lines {
			if tid, _ := l["trace_id"].(string); l["trace_sampled"] == true && !held[tid] {
				return false
			}
		}
		return true
	})
	keptOK := 0
	for _, corr := range append(append([]string{}, oks...), bads...) {
		l := lines[corr]
		tid, _ := l["trace_id"].(string)
		sampled, isBool := l["trace_sampled"].(bool)
		if !isBool {
			t.Fatalf("access line without trace_sampled: %v", l)
		}
		if sampled != held[tid] {
			t.Errorf("%s: trace_sampled %v, Jaeger holds it: %v", corr, sampled, held[tid])
		}
		if sampled && strings.HasPrefix(corr, "ok-") {
			keptOK++
		}
	}
	t.Logf("ratio 0.01: %d of %d 200s kept, %d of %d 502s; Jaeger holds %d traces of these requests", keptOK, len(oks), len(bads), len(bads), len(held))
	if keptOK > 10 {
		t.Errorf("%d of 200 200s kept at ratio 0.01: want about 2", keptOK)
	}
}

// metricsRefused: pointed at Jaeger with OTEL_EXPORTER_OTLP_ENDPOINT alone,
// the edge also pushes metrics, which Jaeger refuses; each failure is a
// rate-limited JSON WARN line on stderr naming the signal and the
// endpoint, and nothing else of the SDK's is written.
func metricsRefused(t *testing.T, j *jaeger, simTel *observability.Telemetry) {
	t.Setenv("OTEL_METRICS_EXPORTER", "")
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "200")
	e := startTraceEdge(t, j, simTel, map[string]string{"EDGE_CACHE_TTL": "1h", "EDGE_CACHE_STALE": "2h",
		"OTEL_METRICS_EXPORTER": ""})
	deadline := time.Now().Add(testkit.EventuallyTimeout)
	for time.Now().Before(deadline) {
		for l := range strings.SplitSeq(e.s.stderr.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "telemetry export failed" {
				if m["level"] != "WARN" || m["signal"] != "metrics" || m["endpoint"] != "http://"+j.otlp {
					t.Errorf("telemetry failure line %s: want WARN, signal metrics, endpoint http://%s", l, j.otlp)
				}
				for l := range strings.SplitSeq(strings.TrimSpace(e.s.stderr.String()), "\n") {
					if !json.Valid([]byte(l)) {
						t.Errorf("a line of stderr is not JSON: %q", l)
					}
				}
				return
			}
		}
		time.Sleep(100 * time.Millisecond) // poll: the metric reader's interval is the outside event
	}
	t.Fatalf("no telemetry failure line on stderr:\n%s", e.s.stderr.String())
}

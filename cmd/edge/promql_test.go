//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// query runs an instant PromQL query and answers the label sets of its
// series.
func (p *promServer) query(t *testing.T, q string) []map[string]string {
	t.Helper()
	res, err := http.Get("http://" + p.addr + "/api/v1/query?" + url.Values{"query": {q}}.Encode())
	if err != nil {
		return nil // not up yet
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusServiceUnavailable {
		return nil // starting: its storage is not ready yet
	}
	var ans struct {
		Status string
		Error  string
		Data   struct {
			Result []struct {
				Metric map[string]string
			}
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&ans); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if ans.Status != "success" {
		t.Fatalf("%s: %s %s", q, ans.Status, ans.Error)
	}
	var out []map[string]string
	for _, r := range ans.Data.Result {
		out = append(out, r.Metric)
	}
	return out
}

// has reports whether one of series carries every label of want.
func has(series []map[string]string, want map[string]string) bool {
	for _, s := range series {
		ok := true
		for k, v := range want {
			ok = ok && s[k] == v
		}
		if ok {
			return true
		}
	}
	return false
}

// waitQuery polls q until cond holds of its answer, or fails after d.
func (p *promServer) waitQuery(t *testing.T, q string, d time.Duration, what string, cond func([]map[string]string) bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	var last []map[string]string
	for time.Now().Before(deadline) {
		if last = p.query(t, q); cond(last) {
			return
		}
		time.Sleep(200 * time.Millisecond) // poll: Prometheus's scrapes are the outside event
	}
	t.Errorf("%s: %s answered %v", q, what, last)
}

var labelSet = regexp.MustCompile(`(\w+)="([^"]*)"`)

// TestDocumentedPromQL (docs/observability.md, "Queries"; docs/contract.md
// section 22): each query of the table, run by a real Prometheus scraping
// an edge, returns the series the table names in the state it names: an
// edge at ratio 0 with EDGE_TRACE_KEEP_RATE=2 whose collector is away and
// whose access log goes to a pipe nobody reads, over a PMS that fails. A
// storm of 5xx answers leaves traces out and opens the breaker; the
// spans of the kept traces fail to export; once the PMS is back and no
// request comes, the breaker's query returns nothing from the first
// scrape after the open timeout (10 s); a flood of cached answers fills
// the access log's buffers. A row the test has no expectation for fails
// it.
func TestDocumentedPromQL(t *testing.T) {
	needProgram(t, "prometheus", "prometheus")
	// The access log: a pipe, its reading end open and never read.
	fifo := filepath.Join(t.TempDir(), "access.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	reader, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The collector is away: nothing listens there.
	away := "http://" + testkit.RefusingAddr(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", away)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_BSP_EXPORT_TIMEOUT", "500")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")

	sim := pmsim.New(pmsim.Config{Seed: 3})
	// The PMS fails from the start: the edge's first walk starts at
	// start-up (docs/contract.md section 22), and a snapshot it held would
	// answer the storm below from the cache.
	sim.SetFaults(pmsim.Faults{ErrorRate: 1, ErrorStatus: 500})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	keysFile, key := keystest.Live(t, "aurora")
	s := start(t, map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "127.0.0.1:0", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": srv.URL, "EDGE_DOCS_URL": testDocsURL,
		"EDGE_CACHE_TTL": "3s", "EDGE_CACHE_STALE": "2h", "EDGE_ACCESS_LOG": fifo, "EDGE_TRACE_KEEP_RATE": "2",
		"EDGE_PMS_ATTEMPT_TIMEOUT": "2s", "EDGE_PMS_TIMEOUT": "5s",
		"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0",
		"OTEL_EXPORTER_OTLP_ENDPOINT": away, "OTEL_METRICS_EXPORTER": "none",
	})
	base := "http://" + waitListening(t, s) + "/v1/"
	t.Cleanup(func() { reader.Close() }) // first of the cleanups: the blocked writes end
	waitHealthy(t, base)
	admin, _ := url.Parse(waitAdmin(t, s.stderr))
	p := startPrometheus(t, admin.Host)
	// Every counter's first sample, at 0, before anything happens.
	p.waitQuery(t, `partner_edge_traces_unkept_total{reason="error"}`, 60*time.Second, "the first scrape",
		func(r []map[string]string) bool { return len(r) == 1 })

	get := func(path string) int {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}

	rows := map[string][]string{}
	for _, row := range docTable(t, "### Queries") {
		q, _, _ := strings.Cut(strings.TrimPrefix(row[1], "`"), "`")
		rows[row[0]] = []string{q, row[2]}
	}
	want := func(name string) (string, map[string]string) {
		t.Helper()
		r, ok := rows[name]
		if !ok {
			t.Fatalf("docs/observability.md, Queries: no row %q", name)
		}
		delete(rows, name)
		labels := map[string]string{}
		if _, set, ok := strings.Cut(r[1], "`{"); ok {
			set, _, _ = strings.Cut(set, "}`")
			for _, m := range labelSet.FindAllStringSubmatch(set, -1) {
				labels[m[1]] = m[2]
			}
		}
		return r[0], labels
	}

	// A storm of 5xx answers: the PMS fails (since the start). The walks
	// on the clock fail (no request walks: docs/contract.md section 24),
	// backing off 1, 2, then the TTL (3 s here, so that the back-off and
	// the walk after the PMS heals take seconds, not the doubling's tens):
	// the fifth failure in a row, about 9 s after start, opens the breaker.
	for range 20 {
		if code := get("properties"); code < 500 {
			t.Fatalf("failing PMS: %d", code)
		}
	}
	bq, bl := want("a PMS breaker open now (the alert `PartnerEdgeBreakerOpen`'s condition)")
	p.waitQuery(t, bq, 60*time.Second, fmt.Sprintf("while open, want %v", bl), func(r []map[string]string) bool { return has(r, bl) })
	opened := time.Now() // it opened at most a scrape before
	for _, name := range []string{"traces the keep rate left out", "spans that never reached the backend"} {
		q, labels := want(name)
		p.waitQuery(t, q, 20*time.Second, fmt.Sprintf("want %v", labels), func(r []map[string]string) bool { return has(r, labels) })
	}

	// The PMS is back; no request comes: the breaker reads half-open from
	// the first scrape after its open timeout (10 s after it opened), or
	// closed once a walk on the clock probed it, and the query returns
	// nothing: by then, plus a scrape (1 s) and this poll's slack.
	sim.Heal()
	p.waitQuery(t, bq, time.Until(opened.Add(10*time.Second+time.Second+3*time.Second)),
		"without traffic after the open timeout, want nothing", func(r []map[string]string) bool { return len(r) == 0 })
	// The next walk on the clock (its back-off at least the breaker's
	// wait) holds a snapshot: lists are answered from it.
	testkit.Eventually(t, "a walk after the PMS healed", func() bool { return get("properties?perPage=1") == 200 })

	// A flood of cached answers: the pipe (64 KiB) and the four 64 KiB
	// buffers fill, and lines are dropped.
	q, labels := want("access-log lines dropped")
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 250 {
				if code := get("properties?perPage=1"); code != 200 {
					t.Errorf("cached list: %d", code)
					return
				}
			}
		})
	}
	wg.Wait()
	p.waitQuery(t, q, 20*time.Second, fmt.Sprintf("want %v", labels), func(r []map[string]string) bool { return has(r, labels) })

	for name := range rows {
		t.Errorf("docs/observability.md, Queries: %q is not run by this test", name)
	}
}

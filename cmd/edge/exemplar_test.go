package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// needProgram returns the path of a program .ci/run installs (Debian
// package pkg). Under CI=true a missing one fails the test; elsewhere the
// test is skipped.
func needProgram(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not found: apt-get install -y %s (.ci/run does)", name, pkg)
		}
		t.Skipf("%s not installed (apt-get install -y %s); CI=true makes this a failure", name, pkg)
	}
	return p
}

// TestPrometheusScrapesExemplars (docs/contract.md section 20): a real
// Prometheus, exemplar storage on, scrapes the edge's admin /metrics (it
// asks for OpenMetrics), and its exemplar API then holds the trace id of
// a request the test sent, on the request-duration histogram; promtool
// check metrics passes on the OpenMetrics answer.
func TestPrometheusScrapesExemplars(t *testing.T) {
	needProgram(t, "prometheus", "prometheus")
	promtool := needProgram(t, "promtool", "prometheus")

	sim := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 3}))
	defer sim.Close()
	keysFile, key := keystest.Live(t, "aurora")
	s := start(t, map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "127.0.0.1:0", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": sim.URL, "EDGE_DOCS_URL": testDocsURL, "EDGE_CACHE_TTL": "1h", "EDGE_CACHE_STALE": "2h",
	})
	base := "http://" + waitListening(t, s) + "/v1/"
	waitHealthy(t, base)
	admin := waitAdmin(t, s.stderr)

	// A request whose trace is kept: the partner sent sampled=1.
	traceID := "4bf92f3577b34da6a3ce929d0e0e4736"
	req, _ := http.NewRequest("GET", base+"properties", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("list: %d", res.StatusCode)
	}

	// promtool check metrics on the OpenMetrics answer.
	mreq, _ := http.NewRequest("GET", admin+"/metrics", nil)
	mreq.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	mres, err := http.DefaultClient.Do(mreq)
	if err != nil {
		t.Fatal(err)
	}
	om, _ := io.ReadAll(mres.Body)
	mres.Body.Close()
	if ct := mres.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("Content-Type %q, want OpenMetrics", ct)
	}
	if !strings.Contains(string(om), `trace_id="`+traceID+`"`) {
		t.Errorf("the OpenMetrics answer has no exemplar with trace_id %s", traceID)
	}
	// Debian's promtool (2.42) reads only the text format: it checks that
	// answer; the OpenMetrics one goes through Prometheus's own
	// OpenMetrics parser, the scraper's, to its # EOF.
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = strings.NewReader(scrape(t, admin+"/metrics"))
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	p := textparse.NewOpenMetricsParser(om, labels.NewSymbolTable())
	for {
		_, err := p.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the OpenMetrics answer does not parse: %v", err)
		}
	}

	// A real Prometheus scrapes the admin listener.
	adminURL, _ := url.Parse(admin)
	listen := startPrometheus(t, adminURL.Host, "--enable-feature=exemplar-storage").addr

	// Poll the exemplar API until the scrape has landed (the outside
	// event: Prometheus's scrape, at its own interval).
	q := url.Values{"query": {"http_server_request_duration_seconds_bucket"},
		"start": {fmt.Sprint(time.Now().Add(-time.Hour).Unix())}, "end": {fmt.Sprint(time.Now().Add(time.Hour).Unix())}}
	deadline := time.Now().Add(testkit.EventuallyTimeout)
	var last string
	for time.Now().Before(deadline) {
		res, err := http.Get("http://" + listen + "/api/v1/query_exemplars?" + q.Encode())
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			last = string(b)
			var ans struct {
				Data []struct {
					Exemplars []struct {
						Labels map[string]string `json:"labels"`
					} `json:"exemplars"`
				} `json:"data"`
			}
			if json.Unmarshal(b, &ans) == nil {
				for _, series := range ans.Data {
					for _, e := range series.Exemplars {
						if e.Labels["trace_id"] == traceID {
							return
						}
					}
				}
			}
		}
		time.Sleep(200 * time.Millisecond) // poll interval; outside event: Prometheus's scrape
	}
	t.Fatalf("Prometheus holds no exemplar with trace_id %s; last answer: %s", traceID, last)
}

// promServer is a real Prometheus scraping one target every second.
type promServer struct{ addr string }

// startPrometheus starts one, with args besides its configuration; it
// logs its output when the test fails.
func startPrometheus(t *testing.T, target string, args ...string) *promServer {
	t.Helper()
	bin := needProgram(t, "prometheus", "prometheus")
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: edge\n    static_configs:\n      - targets: ['%s']\n", target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &promServer{addr: freePort(t)}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + p.addr}, args...)...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("Prometheus's log:\n%s", out.String())
		}
	})
	return p
}

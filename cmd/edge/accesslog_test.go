package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

var droppedSeries = regexp.MustCompile(`(?m)^partner_edge_log_dropped_total\{[^}]*log="access"[^}]*\} (\S+)$`)

// bench/README.md (AccessLogSlowOutput): the access log goes to stdout by default, and a
// stdout that is read slowly (a pipe drained at 10 lines a second) holds no
// request: thousands of requests complete one after the other while the
// reader has taken only a few lines, and partner_edge_log_dropped_total
// counts the lines that found no room. (The latency comparison, p99 with a
// slow output against a fast one, is BenchmarkAccessLogSlowOutput in edge:
// timings belong in benchmarks.)
func TestAccessLogSlowStdoutNeverBlocks(t *testing.T) {
	sim := pmsim.New(pmsim.Config{Seed: 3})
	simSrv := httptest.NewServer(sim)
	defer simSrv.Close()
	keysFile, key := keystest.Live(t, "aurora")

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	var read, fast atomic.Int64 // lines read; fast != 0: drain at full speed
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		br := bufio.NewReader(pr)
		for {
			if _, err := br.ReadSlice('\n'); err != nil && err != bufio.ErrBufferFull {
				return
			}
			read.Add(1)
			if fast.Load() == 0 {
				time.Sleep(100 * time.Millisecond) // the slow reader's own pace (10 lines a second), not a timer of the edge
			}
		}
	}()

	stderr := &testkit.LogBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	env := map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "127.0.0.1:0", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": simSrv.URL, "EDGE_DOCS_URL": testDocsURL, "EDGE_CACHE_TTL": "1h", "EDGE_CACHE_STALE": "2h",
	}
	go func() { done <- run(ctx, []string{"edge"}, mapEnv(env), pw, stderr) }()
	defer func() {
		cancel()
		fast.Store(1)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(testkit.EventuallyTimeout):
			t.Errorf("run did not stop")
		}
		pw.Close()
		<-readerDone
	}()
	s := &started{stderr: stderr, done: done}
	base := "http://" + waitListening(t, s) + "/v1/"
	waitHealthy(t, base)
	admin := waitAdmin(t, stderr)

	// About 300 bytes a line: 4,000 lines are far more than the buffers
	// (256 KiB) and the pipe (64 KiB) hold, so most must be dropped, and a
	// Write that waited for the reader would hold these requests for minutes.
	const n = 4000
	client := &http.Client{Timeout: 30 * time.Second}
	req, _ := http.NewRequest(http.MethodGet, base+"properties?perPage=1", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	for i := range n {
		res, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, res.StatusCode)
		}
	}
	if got := read.Load(); got >= n/2 {
		t.Fatalf("the slow reader took %d lines during %d requests: is it slow?", got, n)
	}
	m := droppedSeries.FindStringSubmatch(scrape(t, admin+"/metrics"))
	if m == nil {
		t.Fatal("no partner_edge_log_dropped_total{log=\"access\"} on /metrics")
	}
	dropped, _ := strconv.ParseFloat(m[1], 64)
	if dropped < n/2 {
		t.Errorf("partner_edge_log_dropped_total = %v after %d requests into a stalled stdout", dropped, n)
	}
}

// The access log is a file when EDGE_ACCESS_LOG names one, the other logs
// stay on stderr, and the lines still buffered when the process stops are
// written on the way out.
func TestAccessLogFileWrittenAtShutdown(t *testing.T) {
	sim := pmsim.New(pmsim.Config{Seed: 3})
	simSrv := httptest.NewServer(sim)
	defer simSrv.Close()
	dir := t.TempDir()
	keysFile := filepath.Join(dir, "keys.json")
	key, rec := keystest.Mint(t, "aurora", keys.ModeLive)
	keystest.Write(t, keysFile, rec)
	logFile := filepath.Join(dir, "access.log")
	s := start(t, map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "off", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": simSrv.URL, "EDGE_DOCS_URL": testDocsURL, "EDGE_ACCESS_LOG": logFile,
	})
	base := "http://" + waitListening(t, s) + "/v1/"
	for range 5 {
		if code := call(t, base+"properties", key); code != 200 {
			t.Fatalf("list: %d", code)
		}
	}
	s.cancel()
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatal(err)
		}
		s.done <- nil // for start's cleanup
	case <-time.After(testkit.EventuallyTimeout):
		t.Fatal("run did not stop")
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(data), `"msg":"request"`); got < 5 {
		t.Errorf("%d request lines in the file, want at least 5:\n%s", got, data)
	}
	if strings.Contains(s.stderr.String(), `"msg":"request"`) || strings.Contains(s.stdout.String(), `"msg":"request"`) {
		t.Errorf("access lines outside the file")
	}
	if !strings.Contains(s.stderr.String(), "edge starting") {
		t.Errorf("the other logs left stderr")
	}
}

// EDGE_ACCESS_LOG_SAMPLE is a fraction above 0 and at most 1; anything else
// stops start-up naming the variable.
func TestAccessLogSampleSetting(t *testing.T) {
	for _, v := range []string{"0", "1.5", "-1", "half"} {
		_, err := parseSettings(nil, mapEnv(map[string]string{"EDGE_ACCESS_LOG_SAMPLE": v}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "EDGE_ACCESS_LOG_SAMPLE") {
			t.Errorf("EDGE_ACCESS_LOG_SAMPLE=%s: %v", v, err)
		}
	}
	s, err := parseSettings(nil, mapEnv(map[string]string{"EDGE_ACCESS_LOG_SAMPLE": "0.25"}), io.Discard)
	if err != nil || s.AccessLogSample != 0.25 || s.AccessLog != "stdout" {
		t.Errorf("0.25: %+v, %v", s.AccessLogSample, err)
	}
}

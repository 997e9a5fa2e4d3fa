package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// What the PMS sends stays inside (docs/contract.md section 22), through
// the real edge binary: internal text a PMS plants in a head line, a
// status line and a 500's body (and in a stray answer on an idle
// connection, which net/http quotes on Go's standard logger) appears in
// none of the edge's stdout, its stderr at debug level, the spans it
// exports to a real OTLP receiver, or /shadow; failures there carry their
// class instead.

// leakMarker is in every planted text.
const leakMarker = "internal.example"

// plants are what the PMS writes, and the class the edge names it by.
var plants = []struct {
	name   string
	faults rawFaults
	class  string
}{
	{"head line", rawFaults{HeadLine: "owner_email head.owner@" + leakMarker}, "malformed_header"},
	{"status line", rawFaults{StatusLine: "HTTP/1.1-status.owner@" + leakMarker + " 200 OK"}, "malformed_status"},
	{"500", rawFaults{Fail500: "owner_email body.owner@" + leakMarker}, "status_500"},
}

// otlpSink is a real OTLP/HTTP trace receiver on loopback: it decodes
// each export (protobuf, gzip or not) and keeps it whole, to be searched.
type otlpSink struct {
	mu      sync.Mutex
	exports [][]byte
	names   map[string]int // spans received by name
	errored int            // spans with an error status
	srv     *httptest.Server
}

func newOTLPSink(t *testing.T) *otlpSink {
	t.Helper()
	s := &otlpSink{names: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *otlpSink) serve(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, "bad gzip", http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var req colltrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || err != nil || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "traces only", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	s.exports = append(s.exports, b)
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s.names[sp.GetName()]++
				if sp.GetStatus().GetCode() == 2 { // STATUS_CODE_ERROR
					s.errored++
				}
			}
		}
	}
	s.mu.Unlock()
	out, _ := proto.Marshal(&colltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// has reports whether any export holds b.
func (s *otlpSink) has(b string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.exports {
		if bytes.Contains(e, []byte(b)) {
			return true
		}
	}
	return false
}

func (s *otlpSink) count(name string) (spans, errored int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[name], s.errored
}

// leakEdge is the edge binary with its stdout kept too.
type leakEdge struct {
	*edgeBin
	stdout *testkit.LogBuffer
	key    string
}

func startLeakEdge(t *testing.T, env []string) *leakEdge {
	t.Helper()
	keysFile, key := keystest.Live(t, "aurora")
	p := &edgeBin{cmd: exec.Command(buildEdge(t)), stderr: &testkit.LogBuffer{}, exited: make(chan struct{})}
	stdout := &testkit.LogBuffer{}
	p.cmd.Env = append(env, "EDGE_KEYS_FILE="+keysFile)
	p.cmd.Stdout, p.cmd.Stderr = stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	p.addr = waitListening(t, &started{stderr: p.stderr})
	return &leakEdge{edgeBin: p, stdout: stdout, key: key}
}

func TestPMSBytesNeverLeaveTheEdge(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	live, candidate := connPMS(t), connPMS(t)
	sink := newOTLPSink(t)
	e := startLeakEdge(t, []string{
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=127.0.0.1:0", "EDGE_BRAND=aurora", "EDGE_DOCS_URL=" + testDocsURL,
		"PMS_BASE_URL=" + live.URL(), "PMS_TOKEN=pms-secret-token",
		"PMS_CANDIDATE_URL=" + candidate.URL(), "PMS_CANDIDATE_TOKEN=pms-secret-token",
		// Walks every 300 ms, and no stale answer once a walk fails: a
		// list then waits for the walk that meets the fault.
		"EDGE_CACHE_TTL=300ms", "EDGE_CACHE_STALE=300ms",
		"EDGE_LOG_LEVEL=debug", "EDGE_MAX_CONCURRENT=0",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_TRACES_SAMPLER=always_on", "OTEL_BSP_SCHEDULE_DELAY=100",
		"OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none",
	})
	admin := waitAdmin(t, e.stderr)
	p := &partnerEdge{edgeBin: e.edgeBin, key: e.key}
	client := &http.Client{Timeout: 30 * time.Second}
	_, ids := p.truth(t)

	// The candidate plants: each failed walk names its class on /shadow.
	var shadows []string
	for _, pl := range plants {
		candidate.Set(pl.faults)
		testkit.Eventually(t, "/shadow names "+pl.class, func() bool {
			p.get(client, "/v1/properties") // a live walk offers the candidate a comparison
			res, err := http.Get(admin + "/shadow")
			if err != nil {
				return false
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			shadows = append(shadows, string(body))
			var s struct {
				Comparisons []struct{ Candidate, Error, Cause string }
			}
			_ = json.Unmarshal(body, &s)
			return len(s.Comparisons) == 1 && s.Comparisons[0].Candidate == "failed" && s.Comparisons[0].Cause == pl.class
		})
	}
	candidate.Set(rawFaults{})

	// The live PMS plants: partners get 502 (503 once the breaker
	// opens), and the edge logs and traces the failures.
	for _, pl := range plants {
		before := live.Stats().Planted
		live.Set(pl.faults)
		testkit.Eventually(t, "a list fails with the "+pl.name+" planted", func() bool {
			a := p.get(client, "/v1/properties")
			if strings.Contains(string(a.body), leakMarker) {
				t.Errorf("a list quotes the PMS: %.300s", a.body)
			}
			return a.status >= 500 && live.Stats().Planted > before
		})
		for _, id := range ids[:3] {
			if a := p.get(client, "/v1/properties/"+id); a.status < 500 || strings.Contains(string(a.body), leakMarker) {
				t.Errorf("get with the %s planted: %d %.200s; want a 5xx without the PMS's text", pl.name, a.status, a.body)
			}
		}
	}
	// A stray answer with the head line planted, on idle connections:
	// net/http quotes it on Go's standard logger.
	live.Set(rawFaults{StrayAfter: 20 * time.Millisecond, Stray: strayAnswer(http.StatusOK, "owner_email stray.owner@"+leakMarker)})
	testkit.Eventually(t, "strays are written", func() bool {
		p.get(client, "/v1/properties")
		return live.Stats().Strays >= 3
	})
	if st := live.Stats(); st.Planted == 0 {
		t.Fatalf("nothing was planted: %+v", st)
	}
	testkit.Eventually(t, "the failed calls' spans are exported", func() bool {
		calls, errored := sink.count("pms.list_hotels")
		return calls > 0 && errored > 0
	})

	// SIGTERM: the access log and the spans are flushed at exit.
	if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.exited:
	case <-time.After(20 * time.Second):
		t.Fatal("still running 20 s after SIGTERM")
	}
	for what, text := range map[string]string{"stdout": e.stdout.String(), "stderr": e.stderr.String(), "/shadow": strings.Join(shadows, "\n")} {
		if strings.Contains(text, leakMarker) {
			t.Errorf("the PMS's text in %s:\n%s", what, grepLines(text, leakMarker))
		}
	}
	if sink.has(leakMarker) {
		t.Error("the PMS's text in an exported span")
	}
	// The failures are there, by class: the access log's 502s, debug
	// lines, spans.
	for _, want := range []string{`"status":502`, "pms attempt: failed", "malformed_header", "malformed_status", "status_500"} {
		if !strings.Contains(e.stdout.String()+e.stderr.String(), want) {
			t.Errorf("the logs never say %q", want)
		}
	}
	if n, _ := sink.count("GET"); n == 0 {
		t.Errorf("no PMS attempt span was exported: %v", fmt.Sprint(sink.names))
	}
}

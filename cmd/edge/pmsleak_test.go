package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

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

// spanCount is how many spans named name the receiver holds, and how
// many of all its spans have an error status.
func spanCount(rc *testkit.OTLPReceiver, name string) (spans, errored int) {
	for _, sp := range rc.Spans() {
		if sp.Name == name {
			spans++
		}
		if sp.Error {
			errored++
		}
	}
	return spans, errored
}

// leakEdge is the edge binary with its partner key.
type leakEdge struct {
	*edgeBin
	key string
}

func startLeakEdge(t *testing.T, env []string) *leakEdge {
	t.Helper()
	keysFile, key := keystest.Live(t, "aurora")
	return &leakEdge{edgeBin: startEdgeProc(t, buildEdge(t), append(env, "EDGE_KEYS_FILE="+keysFile)), key: key}
}

func TestPMSBytesNeverLeaveTheEdge(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	live, candidate := connPMS(t), connPMS(t)
	sink := testkit.NewOTLPReceiver(t) // a real OTLP/HTTP collector
	e := startLeakEdge(t, []string{
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=127.0.0.1:0", "EDGE_BRAND=aurora", "EDGE_DOCS_URL=" + testDocsURL,
		"PMS_BASE_URL=" + live.URL(), "PMS_TOKEN=pms-secret-token",
		"PMS_CANDIDATE_URL=" + candidate.URL(), "PMS_CANDIDATE_TOKEN=pms-secret-token",
		// Walks every 300 ms, and no stale answer once a walk fails: a
		// list then waits for the walk that meets the fault.
		"EDGE_CACHE_TTL=300ms", "EDGE_CACHE_STALE=300ms",
		"EDGE_LOG_LEVEL=debug", "EDGE_MAX_CONCURRENT=0",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
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
		calls, errored := spanCount(sink, "pms.list_hotels")
		return calls > 0 && errored > 0
	})

	// SIGTERM: the access log and the spans are flushed at exit.
	if err := e.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.exited:
	case <-time.After(testkit.EventuallyTimeout):
		t.Fatalf("still running %v after SIGTERM", testkit.EventuallyTimeout)
	}
	for what, text := range map[string]string{"stdout": e.stdout.String(), "stderr": e.stderr.String(), "/shadow": strings.Join(shadows, "\n")} {
		if strings.Contains(text, leakMarker) {
			t.Errorf("the PMS's text in %s:\n%s", what, grepLines(text, leakMarker))
		}
	}
	if sink.TracesHold(leakMarker) {
		t.Error("the PMS's text in an exported span")
	}
	// The failures are there, by class: the access log's 502s, debug
	// lines, spans.
	for _, want := range []string{`"status":502`, "pms attempt: failed", "malformed_header", "malformed_status", "status_500"} {
		if !strings.Contains(e.stdout.String()+e.stderr.String(), want) {
			t.Errorf("the logs never say %q", want)
		}
	}
	if n, _ := spanCount(sink, "GET"); n == 0 {
		t.Errorf("no PMS attempt span was exported: %v", sink.Spans())
	}
}

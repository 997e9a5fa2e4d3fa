package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// exported counts what rc received of the edge: traces, and traces of
// requests (a server span); and the service.name=... and
// service.version=... of the resources.
func exported(rc *testkit.OTLPReceiver) (traces, requests int, resources map[string]bool) {
	all, reqs, resources := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range rc.Spans() {
		all[s.TraceID] = true
		if strings.HasPrefix(s.Name, "GET /v1/") {
			reqs[s.TraceID] = true
		}
		resources["service.name="+s.Service], resources["service.version="+s.ServiceVersion] = true, true
	}
	return len(all), len(reqs), resources
}

// sampledLines counts the access lines of stdout of the list route: all,
// and those whose trace was kept.
func sampledLines(stdout string) (lines, sampled int) {
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil || m["msg"] != "request" || m["route"] != "/v1/properties" {
			continue
		}
		lines++
		if m["trace_sampled"] == true {
			sampled++
		}
	}
	return lines, sampled
}

// TestKeepRateBoundsAPMSOutageStorm (docs/contract.md section 22, "Errors
// are kept, storms are summarised"): a PMS outage before any snapshot is
// held, every partner request a 5xx and each a walk of its own, for ten
// seconds, at EDGE_TRACE_KEEP_RATE=10 and ratio 0: a real OTLP receiver
// gets at most 10 traces a second and 10 at once (about 110), walks
// included; each request is either kept (its access line says
// trace_sampled true, and its trace was received) or counted in
// partner_edge_traces_unkept_total{reason="error"}; no span is dropped;
// OTEL_SERVICE_NAME names the service over OTEL_RESOURCE_ATTRIBUTES, which
// gives its version.
func TestKeepRateBoundsAPMSOutageStorm(t *testing.T) {
	rc := testkit.NewOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	sim := pmsim.New(pmsim.Config{Seed: 3})
	sim.SetFaults(pmsim.Faults{ErrorRate: 1, ErrorStatus: 500})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	keysFile, key := keystest.Live(t, "aurora")
	// The keep rate's bucket fills from the edge's start: the failing walks
	// on the clock (1, 2, 4... s apart) before the storm take from it too.
	started := time.Now()
	s := start(t, map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "127.0.0.1:0", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": srv.URL, "EDGE_DOCS_URL": testDocsURL,
		"EDGE_CACHE_TTL": "1h", "EDGE_CACHE_STALE": "2h", "EDGE_TRACE_KEEP_RATE": "10",
		"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0",
		"OTEL_EXPORTER_OTLP_ENDPOINT": rc.URL, "OTEL_METRICS_EXPORTER": "none",
		"OTEL_SERVICE_NAME": "edge-storm", "OTEL_RESOURCE_ATTRIBUTES": "service.name=ignored,service.version=9.9.9",
	})
	base := "http://" + waitListening(t, s) + "/v1/"
	waitHealthy(t, base)
	admin := waitAdmin(t, s.stderr)

	var mu sync.Mutex
	answered := 0
	begin := time.Now()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			client := &http.Client{Timeout: 10 * time.Second}
			for time.Since(begin) < 10*time.Second {
				req, _ := http.NewRequest("GET", base+"properties", nil)
				req.Header.Set("Authorization", "Bearer "+key)
				res, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode < 500 {
					t.Errorf("a request in the outage answered %d", res.StatusCode)
					return
				}
				mu.Lock()
				answered++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(begin)
	// 10 at once, then 10 a second since the edge started (a busy machine
	// may take seconds from the start to the storm, whose walks' traces
	// are kept from the tokens of that time), and the first walk's.
	bound := 10 + int(10*time.Since(started).Seconds()) + 1

	// Every answered request is kept (its trace received) or counted, and
	// logged (or its line counted as dropped: the storm outruns a log
	// buffer: the health checks' lines are among those counted);
	// a line says trace_sampled true only of a trace received.
	var unkept, logDropped float64
	var lines, sampled int
	testkit.Eventually(t, "every request kept or counted, logged or counted", func() bool {
		body := scrape(t, admin+"/metrics")
		unkept, _ = value(body, `partner_edge_traces_unkept_total{reason="error"}`)
		logDropped, _ = value(body, `partner_edge_log_dropped_total{log="access"}`)
		lines, sampled = sampledLines(s.stdout.String())
		_, servers, _ := exported(rc)
		return servers+int(unkept) == answered && lines <= answered && answered <= lines+int(logDropped)
	})
	traces, servers, resources := exported(rc)
	t.Logf("%d requests in %v, all 5xx: %d traces received (%d of requests), %d counted unkept; bound %d; %d access lines say sampled",
		answered, elapsed.Round(time.Millisecond), traces, servers, int(unkept), bound, sampled)
	if sampled > servers {
		t.Errorf("%d access lines say trace_sampled true, %d request traces received", sampled, servers)
	}
	if traces > bound {
		t.Errorf("%d traces exported in a %v storm at EDGE_TRACE_KEEP_RATE=10: want at most %d", traces, elapsed, bound)
	}
	if answered < 2*bound || servers == 0 || unkept == 0 {
		t.Errorf("the storm was no storm: %d requests, %d kept, %d unkept", answered, servers, int(unkept))
	}
	body := scrape(t, admin+"/metrics")
	for _, reason := range []string{"export_failed", "queue_full"} {
		if v, ok := value(body, `partner_edge_spans_dropped_total{reason="`+reason+`"}`); !ok || v != 0 {
			t.Errorf("spans dropped (%s) %v (exposed %v), want 0 with the receiver up", reason, v, ok)
		}
	}
	if !resources["service.name=edge-storm"] || !resources["service.version=9.9.9"] || len(resources) != 2 {
		t.Errorf("resources of the exports %v, want OTEL_SERVICE_NAME's name (over OTEL_RESOURCE_ATTRIBUTES') and OTEL_RESOURCE_ATTRIBUTES' version alone", resources)
	}
}

// TestSpansDroppedWithTheCollectorDown (docs/contract.md section 22): with
// the collector away, the spans of kept traces that fail to export are
// counted in partner_edge_spans_dropped_total{reason="export_failed"}, and
// it rises with each batch.
func TestSpansDroppedWithTheCollectorDown(t *testing.T) {
	away := "http://" + testkit.RefusingAddr(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", away)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	t.Setenv("OTEL_BSP_EXPORT_TIMEOUT", "300")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	sim := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 3}))
	t.Cleanup(sim.Close)
	keysFile, key := keystest.Live(t, "aurora")
	s := start(t, map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "127.0.0.1:0", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": sim.URL, "EDGE_DOCS_URL": testDocsURL,
		"OTEL_EXPORTER_OTLP_ENDPOINT": away, "OTEL_METRICS_EXPORTER": "none", // every trace kept (always on)
	})
	base := "http://" + waitListening(t, s) + "/v1/"
	waitHealthy(t, base)
	admin := waitAdmin(t, s.stderr)
	dropped := func() float64 {
		v, _ := value(scrape(t, admin+"/metrics"), `partner_edge_spans_dropped_total{reason="export_failed"}`)
		return v
	}
	prev := dropped()
	for round := range 2 {
		for range 5 {
			req, _ := http.NewRequest("GET", base+"properties", nil)
			req.Header.Set("Authorization", "Bearer "+key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
		testkit.Eventually(t, "partner_edge_spans_dropped_total rises", func() bool { return dropped() > prev })
		t.Logf("round %d: %v spans dropped", round, dropped())
		prev = dropped()
	}
}

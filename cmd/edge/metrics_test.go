package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

var adminListening = regexp.MustCompile(`"msg":"admin listening","addr":"([^"]+)"`)

// docs/observability.md: after traffic, /metrics on the admin listener has
// each metric with the expected counts; pprof is there and only there.
func TestMetricsScrape(t *testing.T) {
	sim := pmsim.New(pmsim.Config{Seed: 3})
	pms := newHeldPMS(t, sim)
	keysFile, key := keystest.Live(t, "aurora")
	s := start(t, map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "127.0.0.1:0", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": pms.srv.URL, "EDGE_DOCS_URL": testDocsURL, "EDGE_CACHE_TTL": "1h", "EDGE_CACHE_STALE": "2h",
		"EDGE_PMS_ATTEMPT_TIMEOUT": "20s", "EDGE_PMS_TIMEOUT": "2s", // the first attempt is held until a get joins its walk
	})
	base := "http://" + waitListening(t, s) + "/v1/"
	waitHealthy(t, base)
	admin := waitAdmin(t, s.stderr)

	// One failing get: it joins the first walk (at start-up), which fails
	// with three PMS attempts (two retries): a 502. The walk is walked
	// again and succeeds.
	sim.SetFaults(pmsim.Faults{ErrorRate: 1, ErrorStatus: 500})
	if code := pms.joinFirstWalk(t, admin, base+"properties/00000000-0000-4000-8000-000000000001", key); code != 502 {
		t.Fatalf("failing get: %d", code)
	}
	sim.Heal()
	testkit.Eventually(t, "the first walk's retry succeeds", func() bool { return strings.Contains(s.stderr.String(), `"msg":"pms walk finished"`) })
	// A list twice: hits of the walked snapshot; a 404 route; a 401.
	for _, want := range []int{200, 200} {
		if code := call(t, base+"properties", key); code != want {
			t.Fatalf("list: %d", code)
		}
	}
	if code := call(t, base+"nowhere", key); code != 404 {
		t.Fatalf("404: %d", code)
	}
	if code := call(t, base+"properties", "svc_live_"+strings.Repeat("x", 30)); code != 401 {
		t.Fatalf("401: %d", code)
	}

	body := scrape(t, admin+"/metrics")
	for _, tc := range []struct {
		series string
		want   float64
	}{
		{`partner_edge_pms_attempt_duration_seconds_count{outcome="http_5xx",pms="live"`, 3},
		{`partner_edge_pms_retries_total{outcome="http_5xx",pms="live"`, 2},
		{`partner_edge_cache_lookups_total{outcome="coalesced",pms="live"`, 1},
		{`partner_edge_cache_lookups_total{outcome="miss",pms="live"`, 0},
		{`partner_edge_cache_lookups_total{outcome="hit",pms="live"`, 2},
		{`partner_edge_pms_walks_total{outcome="failed",pms="live"`, 1},
		{`partner_edge_pms_walks_total{outcome="ok",pms="live"`, 1},
		{`partner_edge_pms_walk_pages_total{pms="live"`, 1},
		{`partner_edge_pms_breaker_state{pms="live"`, 0},
		{`partner_edge_problem_responses_total{code="BAD_GATEWAY"`, 1},
		{`partner_edge_problem_responses_total{code="ROUTE_NOT_FOUND"`, 1},
		{`partner_edge_problem_responses_total{code="INVALID_API_KEY"`, 1},
		{`http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="200",http_route="/v1/properties",partner_edge_cache_outcome="hit"`, 2},
		{`partner_edge_requests_shed_total`, 0},
		{`partner_edge_tls_reloads_total{result="failed"`, 0},
		{`http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="502",http_route="/v1/properties/{propertyId}"`, 1},
		{`http_server_active_requests{http_request_method="GET"`, 0},
		// The events feed (docs/operations.md, "Property change events"):
		// registered at 0, nothing changed in the PMS.
		{`partner_edge_events_published_total{pms="live",type="property.created"`, 0},
		{`partner_edge_events_published_total{pms="live",type="property.removed"`, 0},
		{`partner_edge_events_length{pms="live"`, 0},
		{`partner_edge_events_age_seconds{pms="live"`, 0},
		{`partner_edge_events_size_bytes{pms="live"`, 0},
	} {
		if got, ok := value(body, tc.series); !ok || got != tc.want {
			t.Errorf("%s = %v (found %v), want %v", tc.series, got, ok, tc.want)
		}
	}
	for _, series := range []string{`partner_edge_pms_walk_duration_seconds{outcome="ok",pms="live"`, `partner_edge_pms_walk_age_seconds{pms="live"`} {
		if got, ok := value(body, series); !ok || got < 0 || got > 60 {
			t.Errorf("%s = %v (found %v), want the seconds of the walk", series, got, ok)
		}
	}
	if got, ok := value(body, `partner_edge_mapping_rejections_total{reason="invalid_id"`); !ok || got < 1 {
		t.Errorf("mapping rejections not counted: %v", got)
	}
	for _, name := range []string{"partner_edge_keys_reloads_total"} {
		if !strings.Contains(body, name) {
			t.Errorf("%s missing", name)
		}
	}
	if !strings.Contains(scrape(t, admin+"/debug/pprof/"), "goroutine") {
		t.Errorf("no pprof on the admin listener")
	}
	if code := call(t, base+"../debug/pprof/", key); code == 200 {
		t.Errorf("pprof reachable on the public listener")
	}
}

// heldPMS is a PMS whose first list request (the walk the edge starts at
// start-up) waits until a partner's request has joined that walk.
type heldPMS struct {
	srv     *httptest.Server
	arrived chan struct{} // closed when the first list request arrives
	release chan struct{}
}

func newHeldPMS(t *testing.T, pms http.Handler) *heldPMS {
	t.Helper()
	h := &heldPMS{arrived: make(chan struct{}), release: make(chan struct{})}
	var first sync.Once
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/hotels") {
			first.Do(func() { close(h.arrived); <-h.release })
		}
		pms.ServeHTTP(w, r)
	}))
	t.Cleanup(h.srv.Close)
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	})
	return h
}

// joinFirstWalk sends a GET of url with key once the first walk is held
// at the PMS, lets the walk go on once the request is in flight on the
// edge (admin's http_server_active_requests), and returns its status.
func (h *heldPMS) joinFirstWalk(t *testing.T, admin, url, key string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("User-Agent", "metrics-test/1.0")
	return h.join(t, admin, req)
}

// join sends req once the first walk is held at the PMS, lets the walk go
// on once the request is in flight on the edge (admin's
// http_server_active_requests), and returns its status.
func (h *heldPMS) join(t *testing.T, admin string, req *http.Request) int {
	t.Helper()
	select {
	case <-h.arrived:
	case <-time.After(testkit.EventuallyTimeout):
		t.Fatalf("no walk reached the PMS within %s of start-up", testkit.EventuallyTimeout)
	}
	status := make(chan int, 1)
	go func() {
		res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			status <- 0
			return
		}
		res.Body.Close()
		status <- res.StatusCode
	}()
	testkit.Eventually(t, "the request is in flight", func() bool {
		n, _ := value(scrape(t, admin+"/metrics"), `http_server_active_requests{http_request_method="GET"`)
		return n == 1
	})
	close(h.release)
	return <-status
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	res, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// sample reads one line of the exposition; a series without labels has no
// braces (no otel_scope_* labels: docs/contract.md section 18).
var sample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
var labelPair = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"`)

// value finds the sample of series, written as name{label="v",...} with a
// subset of its labels, in a Prometheus text exposition.
func value(body, series string) (float64, bool) {
	name, want, _ := strings.Cut(series, "{")
	wantLabels := labelPair.FindAllStringSubmatch(want, -1)
	for _, line := range strings.Split(body, "\n") {
		m := sample.FindStringSubmatch(line)
		if m == nil || m[1] != name {
			continue
		}
		have := map[string]string{}
		for _, kv := range labelPair.FindAllStringSubmatch(m[2], -1) {
			have[kv[1]] = kv[2]
		}
		match := true
		for _, kv := range wantLabels {
			match = match && have[kv[1]] == kv[2]
		}
		if match {
			f, err := strconv.ParseFloat(m[3], 64)
			return f, err == nil
		}
	}
	return 0, false
}

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
	"github.com/partner-edge/partner-edge/upstream/shadow"
)

// perRequest blanks what differs between answers and edges by design: the
// request id, the timestamp, and the events cursor of a list (each edge's
// position in its own feed: the time of its own walk).
var perRequest = regexp.MustCompile(`req_[A-Za-z0-9_-]+|"timestamp":"[^"]*"|"next":"evt_[0-9a-z]+"`)

// partnerAnswer is what a partner gets, request ids blanked.
type partnerAnswer struct {
	status  int
	headers string
	body    string
}

func answer(t *testing.T, url, key string) partnerAnswer {
	t.Helper()
	res, body := getWithKey(t, url, key)
	var hs []string
	for name, vals := range res.Header {
		switch name {
		case "Date", "Svc-Request-Id", "Traceparent":
			continue
		}
		hs = append(hs, name+": "+strings.Join(vals, ", "))
	}
	slices.Sort(hs)
	return partnerAnswer{status: res.StatusCode, headers: strings.Join(hs, "\n"),
		body: perRequest.ReplaceAllString(string(body), "X")}
}

// startEdge runs the edge on pms with env added, and returns its public
// and admin base URLs.
func startEdge(t *testing.T, pms, keysFile string, env map[string]string) (string, string) {
	t.Helper()
	all := map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "127.0.0.1:0", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": pms, "EDGE_DOCS_URL": testDocsURL, "EDGE_CACHE_TTL": "1s", "EDGE_CACHE_STALE": "1m",
	}
	for k, v := range env {
		all[k] = v
	}
	s := start(t, all)
	base := "http://" + waitListening(t, s) + "/v1/"
	waitHealthy(t, base)
	admin := waitAdmin(t, s.stderr)
	return base, admin
}

// TestShadowLeavesPartnerAnswersUnchanged: an edge with a changed
// candidate (3 properties gone, names renamed away) answers partners byte
// for byte as an edge without one, while /shadow and the metrics report
// the differences; a hanging candidate changes no answer either (docs/contract.md section 14,
// acceptance 2).
func TestShadowLeavesPartnerAnswersUnchanged(t *testing.T) {
	t.Parallel()
	live := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 4}))
	defer live.Close()
	changed := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 4, Drift: pmsim.Drift{Drop: 3,
		Rename: map[string]string{"display_name": "name"}}}))
	defer changed.Close()
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer hanging.Close()
	keysFile, key := keystest.Live(t, "aurora")

	plain, plainAdmin := startEdge(t, live.URL, keysFile, nil)
	shadowed, admin := startEdge(t, live.URL, keysFile, map[string]string{"PMS_CANDIDATE_URL": changed.URL})
	hung, hungAdmin := startEdge(t, live.URL, keysFile, map[string]string{"PMS_CANDIDATE_URL": hanging.URL,
		"EDGE_PMS_TIMEOUT": "3s"})

	// The candidate is walked after the first live walk: wait until the
	// comparison is there, so the answers below are served with it done.
	var st shadow.State
	testkit.Eventually(t, "the candidate comparison is done", func() bool {
		call(t, shadowed+"properties", key)
		_ = json.Unmarshal([]byte(scrape(t, admin+"/shadow")), &st)
		return len(st.Comparisons) == 1
	})
	c := st.Comparisons[0]
	if c.Candidate != "ok" || c.Counts.Removed+c.Counts.Rejected != c.Counts.Live || c.Counts.Rejected != c.Counts.Live-3 {
		t.Errorf("comparison %+v: want 3 removed, every other property rejected (no display_name)", c)
	}
	metrics := scrape(t, admin+"/metrics")
	if v, ok := value(metrics, `partner_edge_shadow_differences{kind="removed",mode="live"`); !ok || v != 3 {
		t.Errorf("partner_edge_shadow_differences removed = %v (%v), want 3", v, ok)
	}
	if v, ok := value(metrics, `partner_edge_shadow_walks_total{mode="live",result="ok"`); !ok || v < 1 {
		t.Errorf("partner_edge_shadow_walks_total ok = %v (%v), want >= 1", v, ok)
	}
	if v, ok := value(metrics, `partner_edge_shadow_last_comparison_timestamp_seconds{mode="live"`); !ok || v <= 0 {
		t.Errorf("partner_edge_shadow_last_comparison_timestamp_seconds = %v (%v)", v, ok)
	}
	if body := scrape(t, plainAdmin+"/shadow"); strings.TrimSpace(body) != `{"configured":false,"comparisons":[]}` {
		t.Errorf("/shadow without a candidate: %s", body)
	}

	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	_, body := getWithKey(t, plain+"properties?perPage=100", key)
	if err := json.Unmarshal(body, &list); err != nil || len(list.Data) == 0 {
		t.Fatalf("list: %v %s", err, body)
	}
	paths := []string{"", "properties", "properties?perPage=100", "properties?page=2&perPage=5", "properties?perPage=0",
		"properties/00000000-0000-4000-8000-000000000001", "properties/not-a-uuid", "nowhere"}
	for _, p := range list.Data {
		paths = append(paths, "properties/"+p.ID, "properties/"+strings.ToUpper(p.ID))
	}
	for _, p := range paths {
		want := answer(t, plain+p, key)
		for name, base := range map[string]string{"changed candidate": shadowed, "hanging candidate": hung} {
			if got := answer(t, base+p, key); got != want {
				t.Errorf("%s: GET %s differs:\n got %d %s\n%s\nwant %d %s\n%s", name, p, got.status, got.body, got.headers,
					want.status, want.body, want.headers)
			}
		}
	}
	// The hanging candidate was really walked (while the answers above
	// were served): its walk ends as a failed comparison at its deadline.
	testkit.Eventually(t, "the hanging candidate's walk failed at its deadline", func() bool {
		var st shadow.State
		_ = json.Unmarshal([]byte(scrape(t, hungAdmin+"/shadow")), &st)
		return len(st.Comparisons) == 1 && st.Comparisons[0].Candidate == "failed" && st.Comparisons[0].Error == "timeout"
	})
	if testing.Verbose() {
		fmt.Printf("compared %d partner answers\n", len(paths))
	}
}

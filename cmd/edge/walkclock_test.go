package main

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// Walks follow the clock, not the traffic (docs/contract.md section 24),
// through the built binary: a PMS change reaches the feed with no partner
// request at all, and polling the feed never reaches the PMS, with
// EDGE_CACHE_TTL=0 too. The PMS is the simulator in this process, behind
// a recorder of what the edge asked.

// recordedPMS is a simulator that records its requests: the X-Request-Id
// of each and the walks begun (a list request without a cursor).
type recordedPMS struct {
	sim *pmsim.Sim
	url string

	mu       sync.Mutex
	requests int
	walks    int
	ids      map[string]int // X-Request-Id: requests
}

func newRecordedPMS(t *testing.T) *recordedPMS {
	t.Helper()
	p := &recordedPMS{sim: pmsim.New(pmsim.Config{Seed: 23, Token: "pms-secret-token"}), ids: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests++
		p.ids[r.Header.Get("X-Request-Id")]++
		if strings.HasSuffix(r.URL.Path, "/hotels") && r.URL.Query().Get("cursor") == "" {
			p.walks++
		}
		p.mu.Unlock()
		p.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// counts are the requests and the walks begun so far.
func (p *recordedPMS) counts() (requests, walks int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests, p.walks
}

// sent reports whether any PMS request carried the request id id.
func (p *recordedPMS) sent(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids[id] > 0
}

// requestIDs are the X-Request-Ids the PMS saw.
func (p *recordedPMS) requestIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for id := range p.ids {
		out = append(out, id)
	}
	return out
}

// startClockEdge starts an edge on p's live PMS alone with keys k and a
// cache TTL of ttl.
func startClockEdge(t *testing.T, p *recordedPMS, k feedKeys, ttl string) string {
	t.Helper()
	env := []string{
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora", "EDGE_KEYS_FILE=" + k.file,
		"PMS_BASE_URL=" + p.url, "PMS_TOKEN=pms-secret-token",
		"EDGE_DOCS_URL=" + testDocsURL, "EDGE_CACHE_TTL=" + ttl, "EDGE_ACCESS_LOG=off",
	}
	return "http://" + startEdgeProc(t, buildEdge(t), env).addr + "/v1/"
}

// getID is p.get that also answers the request's Svc-Request-Id.
func (p partner) getID(t *testing.T, path string) (code int, requestID string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+p.key)
	res, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Svc-Request-Id")
}

var walkRequestID = regexp.MustCompile(`^req_[A-Za-z0-9]{24}$`)

// With no partner request after the change, the edge walks on its TTL
// and the change is in the feed at the first read: the second walk begun
// after the change implies the first one after it ended and was diffed.
// Every PMS request of a walk no request started carries an id of its
// own, req_ and 24 characters.
func TestFeedFollowsThePMSWithNoTraffic(t *testing.T) {
	t.Parallel()
	pms := newRecordedPMS(t)
	k := newFeedKeys(t, []string{"*"})
	live := partner{startClockEdge(t, pms, k, "1s"), k.live}
	ids, cursor := live.list(t)
	_, before := pms.counts()
	edit(t, pms.sim, func(rec map[string]any) map[string]any {
		if hotel(rec) == ids[0] {
			rec["display_name"] = "Aurora While Nobody Called"
		}
		return rec
	})
	// Waiting on the PMS's record, not on the edge: no partner request.
	testkit.Eventually(t, "two walks begin after the change, with no partner traffic", func() bool {
		_, walks := pms.counts()
		return walks >= before+2
	})
	got := live.follow(t, cursor)
	if len(got) != 1 || got[0].String() != "property.updated "+ids[0]+" Aurora While Nobody Called" {
		t.Fatalf("the feed after walks with no traffic: %v; want the one update", got)
	}
	for _, id := range pms.requestIDs() {
		if !walkRequestID.MatchString(id) {
			t.Errorf("a PMS request carried X-Request-Id %q; want req_ and 24 characters on every one", id)
		}
	}
}

// docs/contract.md section 24: with EDGE_CACHE_TTL=0 the feed's walks run
// on the clock (every 30 s) and 100 polls of /v1/events make no PMS
// request: none carries a poll's request id, and the walks begun while
// they ran are the scheduled ones at most. A list (TTL 0: its own walk)
// does reach the PMS under its own id: the check can see a request's
// walk.
func TestEventsPollsNeverReachThePMS(t *testing.T) {
	t.Parallel()
	pms := newRecordedPMS(t)
	k := newFeedKeys(t, []string{"*"})
	live := partner{startClockEdge(t, pms, k, "0"), k.live}
	testkit.Eventually(t, "the feed's first walk on the clock", func() bool {
		code, _ := live.getID(t, "events?limit=1")
		return code == http.StatusOK
	})
	_, walksBefore := pms.counts()
	start := time.Now()
	var polls []string
	for range 100 {
		code, id := live.getID(t, "events?limit=100")
		if code != http.StatusOK {
			t.Fatalf("poll: %d", code)
		}
		polls = append(polls, id)
	}
	elapsed := time.Since(start)
	_, walksAfter := pms.counts()
	for _, id := range polls {
		if pms.sent(id) {
			t.Fatalf("the poll %s reached the PMS", id)
		}
	}
	if scheduled := int(elapsed/(30*time.Second)) + 1; walksAfter-walksBefore > scheduled {
		t.Fatalf("%d walks begun during 100 polls of %v; want at most the %d on the clock", walksAfter-walksBefore, elapsed, scheduled)
	}
	code, id := live.getID(t, "properties?perPage=1")
	if code != http.StatusOK || !pms.sent(id) {
		t.Fatalf("a list with TTL 0: %d, reached the PMS under its id: %v; want its own walk", code, pms.sent(id))
	}
}

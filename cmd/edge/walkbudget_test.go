package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// A brand of any size behind a PMS of real speed (docs/contract.md
// section 24), through the real binary: a simulator of 20,000 hotels in
// pages of 100 at 50 ms a page (a walk of 10 s, longer than
// EDGE_PMS_TIMEOUT), as PMSs really answer, not at loopback speed.

// realPMS is a simulator of hotels in pages of 100, each request answered
// after perPage (the PMS's time per page), that records the walks it
// serves: when each began (a list request without cursor) and ended (the
// page whose nextCursor is null).
type realPMS struct {
	sim *pmsim.Sim
	srv *httptest.Server

	mu    sync.Mutex
	walks []walkSpan
	pages atomic.Int64
}

type walkSpan struct{ start, end time.Time }

func newRealPMS(t *testing.T, hotels int, perPage time.Duration) *realPMS {
	t.Helper()
	p := &realPMS{sim: pmsim.New(pmsim.Config{Brands: 1, HotelsPerBrand: hotels, PageSize: 100, Seed: 24, Token: "pms-secret-token"})}
	p.sim.SetFaults(pmsim.Faults{Latency: perPage})
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/brands/aurora/hotels") {
			p.sim.ServeHTTP(w, r)
			return
		}
		if !r.URL.Query().Has("cursor") {
			p.mu.Lock()
			p.walks = append(p.walks, walkSpan{start: time.Now()})
			p.mu.Unlock()
		}
		rec := httptest.NewRecorder()
		p.sim.ServeHTTP(rec, r)
		if rec.Code == http.StatusOK {
			p.pages.Add(1)
			if bytes.Contains(rec.Body.Bytes(), []byte(`"nextCursor":null`)) {
				p.mu.Lock()
				for i := len(p.walks) - 1; i >= 0; i-- { // the walk this last page ends: the latest open one
					if p.walks[i].end.IsZero() {
						p.walks[i].end = time.Now()
						break
					}
				}
				p.mu.Unlock()
			}
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// spans returns the walks so far.
func (p *realPMS) spans() []walkSpan {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]walkSpan(nil), p.walks...)
}

// ended is the number of walks that reached their last page.
func (p *realPMS) ended() int {
	n := 0
	for _, w := range p.spans() {
		if !w.end.IsZero() {
			n++
		}
	}
	return n
}

// activeTotal is the number of active properties partners see: the
// simulator's records mapped as the edge maps them.
func (p *realPMS) activeTotal(t *testing.T) int {
	t.Helper()
	n := 0
	for _, raw := range p.sim.Records("aurora") {
		if pr, err := mapping.MapRaw(raw, mapping.Options{Brand: "aurora", Zones: &mapping.ZoneCache{}}); err == nil && pr.Active() {
			n++
		}
	}
	if n < 1000 {
		t.Fatalf("%d active properties in the simulator; want most of them", n)
	}
	return n
}

// listAnswer is one list request's status, Retry-After and total.
type listAnswer struct {
	status     int
	retryAfter string
	code       string
	total      int
	err        error
}

func (p *partnerEdge) list(client *http.Client) listAnswer {
	a := p.get(client, "/v1/properties?perPage=1")
	if a.err != nil {
		return listAnswer{err: a.err}
	}
	var body struct {
		Code string `json:"code"`
		listing
	}
	_ = json.Unmarshal(a.body, &body)
	return listAnswer{status: a.status, code: body.Code, total: body.Meta.Pagination.Total, retryAfter: a.retryAfter}
}

// A1: while the first walk (10 s) runs, a list with the default request
// deadline (10 s) waits 2 s and answers 503 SERVICE_UNAVAILABLE with a
// Retry-After of the time the walk has run (the first walk of a process
// knows no length: docs/contract.md section 24), never 504, and
// /v1/health stays ok; once it ends, 200 with the true total; and while
// a refresh walks the PMS again (TTL 5 s here), every answer is 200 from
// the previous snapshot.
func TestFirstWalkOfARealSpeedPMSAnswers503ThenServes(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and walks a PMS of real speed for tens of seconds")
	}
	pms := newRealPMS(t, 20_000, 50*time.Millisecond)
	truth := pms.activeTotal(t)
	edge := startPartnerEdge(t, pms.srv.URL, "5s")
	client := &http.Client{Timeout: 10 * time.Second}

	unavailable := 0
	for {
		sent := time.Now()
		a := edge.list(client)
		if a.err != nil {
			t.Fatalf("list during the first walk: %v", a.err)
		}
		if a.status == http.StatusOK {
			if a.total != truth {
				t.Fatalf("first 200: total %d, want %d", a.total, truth)
			}
			break
		}
		answered := time.Now()
		ra, err := strconv.Atoi(a.retryAfter)
		if a.status != http.StatusServiceUnavailable || a.code != "SERVICE_UNAVAILABLE" || err != nil || ra < 1 {
			t.Fatalf("list during the first walk: %d %s, Retry-After %q; want 503 SERVICE_UNAVAILABLE with Retry-After (walks so far %d)",
				a.status, a.code, a.retryAfter, len(pms.spans()))
		}
		// The first walk's Retry-After is the time it has run so far, at
		// most a minute (docs/contract.md section 27: 1 s to 60 s; a walk
		// on a machine whose cores other work keeps busy runs longer).
		if w := pms.spans(); len(w) > 0 {
			ran := answered.Sub(w[0].start)
			if d := time.Duration(ra)*time.Second - min(ran, time.Minute); d < -2*time.Second || d > 2*time.Second {
				t.Errorf("Retry-After %d s, %v into the first walk; want the time it has run", ra, ran)
			}
		}
		// The PMS records the walk's end before the edge has read, mapped
		// and installed the last page; a request waits for that up to its
		// deadline (2 s), so only one sent a deadline after the end must
		// not be 503.
		if w := pms.spans(); len(w) > 0 && !w[0].end.IsZero() && sent.After(w[0].end.Add(2*time.Second)) {
			t.Fatalf("503 for a request sent %v after the first walk ended", sent.Sub(w[0].end))
		}
		if h := edge.get(client, "/v1/health"); h.status != http.StatusOK || string(h.body) != `{"status":"ok"}` {
			t.Fatalf("health during the first walk: %d %s; want ok", h.status, h.body)
		}
		unavailable++
	}
	if unavailable == 0 || pms.ended() != 1 {
		t.Fatalf("%d answers 503 before the first 200, %d walks ended; want the first walk to outlast a request's wait", unavailable, pms.ended())
	}
	// Each 503 was held about 2 s, not the request's 10 s deadline: read
	// off the edge's own access lines (the machine may be busy), within
	// 3 s.
	var held []string
	testkit.Eventually(t, "the access lines of the 503s", func() bool { // the access log is written behind the answers
		held = nil
		for line := range strings.SplitSeq(edge.stderr.String(), "\n") {
			var l struct{ Msg, Duration string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "request" && strings.Contains(line, `"status":503`) {
				held = append(held, l.Duration)
			}
		}
		return len(held) >= unavailable
	})
	for _, h := range held {
		if d, err := time.ParseDuration(h); err != nil || d > 3*time.Second || d < 2*time.Second {
			t.Errorf("a 503 held %s; want 2 s (within 3 s)", h)
		}
	}

	// The refresh: requests keep coming until a second walk has begun and
	// ended; every one is 200 with the total of the previous snapshot.
	served := 0
	for deadline := time.Now().Add(testkit.EventuallyTimeout); pms.ended() < 2; served++ {
		if time.Now().After(deadline) {
			t.Fatalf("no second walk within %v: %v", testkit.EventuallyTimeout, pms.spans())
		}
		if a := edge.list(client); a.err != nil || a.status != http.StatusOK || a.total != truth {
			t.Fatalf("list while the refresh walks (%d walks begun): %d %s %v total %d; want 200 with %d",
				len(pms.spans()), a.status, a.code, a.err, a.total, truth)
		}
		time.Sleep(50 * time.Millisecond) // the load's pace, not a wait for an event
	}
	w := pms.spans()
	if gap := w[1].start.Sub(w[0].end); gap < 5*time.Second-100*time.Millisecond {
		t.Errorf("the refresh walk began %v after the first ended; want at least the TTL (5 s)", gap)
	}
	t.Logf("%d answers 503 during the first walk (%v), %d answers 200 around the refresh (%v)",
		unavailable, w[0].end.Sub(w[0].start), served, w[1].end.Sub(w[1].start))
}

// A first walk that fails on time (the walk's budget,
// EDGE_PMS_WALK_TIMEOUT=3s, against a walk of 10 s) is 503 with a
// Retry-After for every partner request, never 504 (docs/contract.md
// section 24); the PMS sees walks no closer together than the back-off
// after each failure (1 s, 2 s, ...), however often partners ask.
func TestFirstWalkFailingOnTimeIs503WithBackOff(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and walks a PMS of real speed for tens of seconds")
	}
	pms := newRealPMS(t, 20_000, 50*time.Millisecond)
	edge := startPartnerEdge(t, pms.srv.URL, "30s", "EDGE_PMS_WALK_TIMEOUT=3s")
	client := &http.Client{Timeout: 15 * time.Second}
	answers := map[string]int{}
	for len(pms.spans()) < 4 {
		a := edge.list(client)
		if a.err != nil {
			t.Fatalf("list: %v", a.err)
		}
		ra, err := strconv.Atoi(a.retryAfter)
		if a.status != http.StatusServiceUnavailable || a.code != "SERVICE_UNAVAILABLE" || err != nil || ra < 1 || ra > 60 {
			t.Fatalf("list while the first walks fail on time: %d %s, Retry-After %q; want 503 with Retry-After",
				a.status, a.code, a.retryAfter)
		}
		answers[a.retryAfter]++
		time.Sleep(100 * time.Millisecond) // the partners' pace, not a wait for an event
	}
	w := pms.spans()
	for i := 1; i < len(w); i++ {
		// Each walk is cut at 3 s; the next begins after the back-off of
		// the failures so far: 1 s, then 2 s, then 4 s. Measured from
		// the end of the walk before as the PMS saw it: its start there
		// lags the edge's by however long a loaded machine takes to send
		// the first page's request.
		backoff := time.Second << (i - 1)
		if gap := w[i].start.Sub(w[i-1].end); gap < backoff-250*time.Millisecond {
			t.Errorf("walk %d began %v after walk %d ended; want the back-off (%v)", i, gap, i-1, backoff)
		}
	}
	t.Logf("walks began %v apart; answers by Retry-After: %v", func() (g []time.Duration) {
		for i := 1; i < len(w); i++ {
			g = append(g, w[i].start.Sub(w[i-1].start).Round(10*time.Millisecond))
		}
		return g
	}(), answers)
}

// A2: the PMS answers every page 2 s late for 6 s (a walk of the 8,000
// hotels would take 160 s) under mixed load, lists and gets of known ids,
// with the default request and PMS deadlines: no partner 5xx; the held
// snapshot answers while the slow walk goes on (TTL 2 s here: the refresh
// walks through most of the slow window), and the walk completes once the
// PMS is fast again. The brand's size and the window's length are the
// least that keep a refresh walking through the window (a 4 s walk, three
// pages 2 s late): the claim is the same at 20,000 hotels and 12 s, which
// cost the suite 20 s more.
func TestSlowPMSUnderLoadServesTheHeldSnapshot(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and walks a PMS of real speed for tens of seconds")
	}
	const slowWindow = 6 * time.Second
	pms := newRealPMS(t, 8_000, 50*time.Millisecond)
	edge := startPartnerEdge(t, pms.srv.URL, "2s")
	client := &http.Client{Timeout: 30 * time.Second}
	testkit.Eventually(t, "the first walk ends", func() bool { return pms.ended() == 1 })
	first := edge.get(client, "/v1/properties?perPage=100")
	var l listing
	if first.status != http.StatusOK || json.Unmarshal(first.body, &l) != nil || len(l.Data) != 100 {
		t.Fatalf("after the first walk: %d %.200s", first.status, first.body)
	}
	paths := []string{"/v1/properties?perPage=50", "/v1/properties?page=3&perPage=20"}
	for _, d := range l.Data[:20] {
		paths = append(paths, "/v1/properties/"+d.ID)
	}

	pms.sim.SetFaults(pmsim.Faults{Latency: 2 * time.Second})
	slowFrom, pagesBefore := time.Now(), pms.pages.Load()
	var (
		mu   sync.Mutex
		bad  = map[string]int{}
		sent atomic.Int64
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	for g := range 3 {
		wg.Go(func() {
			for i := g; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				a := edge.get(client, paths[i%len(paths)])
				sent.Add(1)
				if a.err != nil || a.status != http.StatusOK {
					mu.Lock()
					bad[fmt.Sprintf("%s: %d %v", a.path, a.status, a.err)]++
					mu.Unlock()
				}
				time.Sleep(50 * time.Millisecond) // the load's pace: about 50 requests a second in all
			}
		})
	}
	time.Sleep(slowWindow) // the slow window: its length is the scenario, not a wait for an event
	pms.sim.SetFaults(pmsim.Faults{Latency: 50 * time.Millisecond})
	slowPages := pms.pages.Load() - pagesBefore
	testkit.Eventually(t, "a walk begun in the slow window ends", func() bool { return pms.ended() >= 2 })
	close(stop)
	wg.Wait()
	for what, n := range bad {
		t.Errorf("%d of %d answers: %s", n, sent.Load(), what)
	}
	if len(pms.spans()) < 2 || pms.spans()[1].start.After(slowFrom.Add(slowWindow)) || slowPages == 0 {
		t.Fatalf("walks %v, %d pages in the slow window; want a refresh walking through it", pms.spans(), slowPages)
	}
	t.Logf("%d answers, all 200; the refresh walk took %v (%d pages 2 s late)", sent.Load(),
		pms.spans()[1].end.Sub(pms.spans()[1].start), slowPages)
}

// A3: a fleet of three edges on a real redis-server, a walk of 12 s (120
// pages at 100 ms, longer than the lease of a fixed EDGE_PMS_TIMEOUT):
// the PMS is walked by one member at a time, each walk beginning at least
// a TTL (5 s) after the previous one ended: one walk per TTL for the
// fleet, counted at the PMS, not three.
func TestFleetWalksOncePerTTLWhateverTheWalksLength(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and walks a PMS of real speed for tens of seconds")
	}
	bin := buildEdge(t)
	redisSrv := redistest.Start(t)
	_, open, keyFile := fleetKeys(t)
	pms := newRealPMS(t, 12_000, 100*time.Millisecond)
	edges := startFleetWith(t, bin, 3, keyFile, pms.srv.URL, "EDGE_REDIS_URL="+redisSrv.URL(), "EDGE_CACHE_TTL=5s")

	// Partners read every member all along (refreshes are asked for).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var served, unavailable atomic.Int64
	var mu sync.Mutex
	bad := map[string]int{}
	other := func(what string) { mu.Lock(); bad[what]++; mu.Unlock() }
	// A request waits for the first walk up to its deadline (10 s), and a
	// member that did not walk learns of the snapshot from Redis after the
	// walker published it: a 503 is the first walk's for a request sent
	// before its end plus that deadline.
	duringFirstWalk := func(sent time.Time) bool {
		w := pms.spans()
		return len(w) == 0 || w[0].end.IsZero() || sent.Before(w[0].end.Add(10*time.Second))
	}
	for _, e := range edges {
		wg.Go(func() {
			client := &http.Client{Timeout: 15 * time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", e.base+"properties?perPage=1", nil)
				req.Header.Set("Authorization", "Bearer "+open)
				sent := time.Now()
				res, err := client.Do(req)
				switch {
				case err != nil:
					other(fmt.Sprint(err))
				case res.StatusCode == http.StatusOK:
					served.Add(1)
				case res.StatusCode == http.StatusServiceUnavailable && duringFirstWalk(sent):
					unavailable.Add(1)
				default:
					other(fmt.Sprintf("%d, sent %v after the first walk ended", res.StatusCode, sent.Sub(pms.spans()[0].end)))
				}
				if res != nil {
					res.Body.Close()
				}
				time.Sleep(100 * time.Millisecond) // the load's pace
			}
		})
	}
	deadline := time.Now().Add(testkit.EventuallyTimeout)
	for pms.ended() < 2 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // polling the PMS's record of walks
	}
	close(stop)
	wg.Wait()
	w := pms.spans()
	if pms.ended() < 2 {
		t.Fatalf("walks %v: want two within %v", w, testkit.EventuallyTimeout)
	}
	for i := 1; i < len(w); i++ {
		if w[i-1].end.IsZero() || w[i].start.Before(w[i-1].end) {
			t.Errorf("walk %d began at %v while walk %d (%v..%v) went on: more than one member walked", i, w[i].start, i-1, w[i-1].start, w[i-1].end)
		} else if gap := w[i].start.Sub(w[i-1].end); gap < 5*time.Second-250*time.Millisecond {
			t.Errorf("walk %d began %v after the previous ended; want at least the TTL (5 s)", i, gap)
		}
	}
	if len(bad) != 0 || served.Load() == 0 {
		t.Errorf("partners: %d served, %d 503 during the first walk, other answers %v; want no other", served.Load(), unavailable.Load(), bad)
	}
	var told []string
	for _, s := range w {
		told = append(told, fmt.Sprintf("%.1fs..%.1fs", s.start.Sub(w[0].start).Seconds(), s.end.Sub(w[0].start).Seconds()))
	}
	t.Logf("walks (real redis %v): %v; partners %d served, %d 503 during the first walk", redisSrv.Real(), told, served.Load(), unavailable.Load())
}

// A PMS that refuses PMS_TOKEN is an ERROR on stderr naming PMS_TOKEN
// within 5 s of start, with a class and never a byte the PMS sent; an
// address where nothing listens names PMS_BASE_URL (docs/contract.md
// section 22). The 5 s are read off the process's own log (its "edge
// starting" line and the ERROR's times): the test's wall clock only bounds
// the wait, since a loaded machine may start the binary and poll its stderr
// late.
func TestPMSThatRefusesTheEdgeSaysSoAtStart(t *testing.T) {
	t.Parallel()
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Pms-Note", "PMS-HEADER-BYTES")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"PMS-BODY-BYTES"}`))
	}))
	t.Cleanup(refusing.Close)
	for _, tc := range []struct {
		name, url, setting, class string
	}{
		{"token refused", refusing.URL, "PMS_TOKEN", "credentials_refused"},
		{"unreachable", "http://" + testkit.RefusingAddr(t), "PMS_BASE_URL", "unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			edge := startPartnerEdge(t, tc.url, "30s")
			var line string
			for line == "" {
				for l := range strings.SplitSeq(edge.stderr.String(), "\n") {
					if strings.Contains(l, `"level":"ERROR"`) && strings.Contains(l, "check "+tc.setting) {
						line = l
					}
				}
				if line == "" && time.Since(start) > testkit.EventuallyTimeout {
					t.Fatalf("no ERROR naming %s within %v of start:\n%s", tc.setting, testkit.EventuallyTimeout, edge.stderr.String())
				}
				time.Sleep(20 * time.Millisecond) // polling the process's stderr
			}
			if took := logTime(t, line).Sub(logTime(t, startingLine(t, edge.stderr.String()))); took > 5*time.Second {
				t.Errorf("ERROR naming %s %v after the edge started; want within 5 s", tc.setting, took)
			}
			if !strings.Contains(line, `"class":"`+tc.class+`"`) {
				t.Errorf("ERROR line %s: want class %s", line, tc.class)
			}
			if log := edge.stderr.String(); strings.Contains(log, "PMS-BODY-BYTES") || strings.Contains(log, "PMS-HEADER-BYTES") {
				t.Errorf("the log quotes what the PMS sent:\n%s", log)
			}
			if n := strings.Count(edge.stderr.String(), "check "+tc.setting); n != 1 {
				t.Errorf("%d ERROR lines naming %s in the first seconds; want one (at most one a minute)", n, tc.setting)
			}
			waitHealthy(t, "http://"+edge.addr+"/v1/")
		})
	}
}

// logTime is the time of one JSON log line.
func logTime(t *testing.T, line string) time.Time {
	t.Helper()
	var l struct{ Time time.Time }
	if err := json.Unmarshal([]byte(line), &l); err != nil || l.Time.IsZero() {
		t.Fatalf("no time in log line %q: %v", line, err)
	}
	return l.Time
}

// startingLine is the process's "edge starting" line.
func startingLine(t *testing.T, log string) string {
	t.Helper()
	for l := range strings.SplitSeq(log, "\n") {
		if strings.Contains(l, `"msg":"edge starting"`) {
			return l
		}
	}
	t.Fatalf("no edge starting line:\n%s", log)
	return ""
}

// A single edge with EDGE_DATA_DIR keeps its last walk's length across a
// restart (docs/contract.md section 27): while the first walk after the
// restart runs, each partner request is answered within 3 s, 503 with a
// Retry-After no more than 2 s off the walk's remaining time, the kept
// length less what it has run (a process that knew no length would say
// the time run so far, seconds off early in the walk).
func TestRetryAfterFromTheWalkKeptAcrossARestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the edge and walks a PMS of real speed twice")
	}
	pms := newRealPMS(t, 20_000, 50*time.Millisecond)
	dir := t.TempDir()
	client := &http.Client{Timeout: 10 * time.Second}
	first := startPartnerEdge(t, pms.srv.URL, "5m", "EDGE_DATA_DIR="+dir)
	testkit.Eventually(t, "the first edge serves its first walk", func() bool { return first.list(client).status == http.StatusOK })
	kept := pms.spans()[0].end.Sub(pms.spans()[0].start)
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-first.exited

	launched := time.Now()
	second := startPartnerEdge(t, pms.srv.URL, "5m", "EDGE_DATA_DIR="+dir)
	unavailable := 0
	for {
		a := second.list(client)
		answered := time.Now()
		if a.err != nil {
			t.Fatalf("list during the walk after the restart: %v", a.err)
		}
		if a.status == http.StatusOK {
			break
		}
		ra, err := strconv.Atoi(a.retryAfter)
		if a.status != http.StatusServiceUnavailable || err != nil {
			t.Fatalf("list during the walk after the restart: %d %s, Retry-After %q; want 503 with Retry-After", a.status, a.code, a.retryAfter)
		}
		if w := pms.spans(); len(w) > 1 && w[1].end.IsZero() {
			// The remaining time the edge can know: the kept length less
			// what this walk has run, at least 1 s (a walk slower than the
			// last, on a busy machine, has no better estimate). The walk
			// began, as the edge counts it, between the process's launch
			// and the PMS's first request of it (seconds apart on a
			// machine whose cores other work keeps busy).
			least := max(kept-answered.Sub(launched), time.Second)
			most := max(kept-answered.Sub(w[1].start), time.Second)
			if got := time.Duration(ra) * time.Second; got < least-2*time.Second || got > most+2*time.Second {
				t.Errorf("Retry-After %d s with %v to %v of a %v walk to go; want the remaining time within 2 s", ra,
					least.Round(time.Millisecond), most.Round(time.Millisecond), kept.Round(time.Millisecond))
			}
		}
		unavailable++
	}
	if unavailable == 0 {
		t.Fatalf("no 503 during the walk after the restart (walks %v); want the walk to outlast a request's wait", pms.spans())
	}
	// How long each 503 was held, as the edge timed it (its access log,
	// written a moment after each answer): the client's own clock adds
	// whatever a loaded machine takes to schedule the test.
	var held []string
	testkit.Eventually(t, "every 503 in the access log", func() bool {
		held = held[:0]
		for _, line := range strings.Split(second.stderr.String(), "\n") {
			var r struct {
				Msg, Duration string
				Status        int
			}
			if json.Unmarshal([]byte(line), &r) == nil && r.Msg == "request" && r.Status == http.StatusServiceUnavailable {
				held = append(held, r.Duration)
			}
		}
		return len(held) >= unavailable
	})
	for _, h := range held {
		if d, err := time.ParseDuration(h); err != nil || d > 2500*time.Millisecond {
			t.Errorf("a request held %s during the walk after the restart; want at most the 2 s wait", h)
		}
	}
	t.Logf("%d answers 503 during the walk after the restart; the kept walk took %v", unavailable, kept)
}

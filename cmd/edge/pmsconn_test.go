package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// The PMS connection as PMSs really behave (docs/contract.md section 19),
// through the real edge binary against rawPMS (rawpms_test.go), a PMS that
// misbehaves at the socket level. Each test runs twice: with EDGE_CACHE_TTL=0 (every
// partner request reads the PMS: gets are PMS gets, lists are walks) and
// with a cache (partners are answered from snapshots; the PMS sees walks).
// The cached run's TTL is short (walkTTL) so that a test of a few seconds
// sees many walks over connections that have been idle; the default TTL
// only makes the walks rarer.

const walkTTL = "300ms"

var pmsModes = []struct{ name, ttl string }{{"ttl0", "0"}, {"walks", walkTTL}}

// connPMS is a rawPMS in front of a simulator of 1,200 hotels in
// pages of 100 (a walk is 12 pages on one connection).
func connPMS(t *testing.T) *rawPMS {
	t.Helper()
	_, s := strayPMS(t)
	return s
}

// partnerEdge is an edge process serving aurora from pmsURL, with its key.
type partnerEdge struct {
	*edgeBin
	key string
}

func startPartnerEdge(t *testing.T, pmsURL, ttl string, extra ...string) *partnerEdge {
	t.Helper()
	keysFile, key := keystest.Live(t, "aurora")
	env := append([]string{
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora",
		"EDGE_KEYS_FILE=" + keysFile, "PMS_BASE_URL=" + pmsURL, "EDGE_DOCS_URL=" + testDocsURL,
		"PMS_TOKEN=pms-secret-token", "EDGE_CACHE_TTL=" + ttl, "EDGE_ACCESS_LOG=stderr",
		// The load of these tests is the test's own: no shedding cap.
		"EDGE_MAX_CONCURRENT=0",
	}, extra...)
	return &partnerEdge{edgeBin: startEdgeProc(t, buildEdge(t), env), key: key}
}

// pmsAnswer is one partner request's outcome.
type pmsAnswer struct {
	path       string
	status     int
	retryAfter string
	body       []byte
	err        error
}

// get sends one partner GET.
func (p *partnerEdge) get(client *http.Client, path string) pmsAnswer {
	req, _ := http.NewRequest("GET", "http://"+p.addr+path, nil)
	req.Header.Set("Authorization", "Bearer "+p.key)
	req.Header.Set("User-Agent", "pmsconn-test/1.0")
	res, err := client.Do(req)
	if err != nil {
		return pmsAnswer{path: path, err: err}
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return pmsAnswer{path: path, status: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), body: body, err: err}
}

// burst sends n partner requests at once, one in five a list page and the
// others gets of ids, round robin; it returns the answers.
func (p *partnerEdge) burst(n int, ids []string) []pmsAnswer {
	client := &http.Client{Timeout: 30 * time.Second}
	out := make([]pmsAnswer, n)
	var wg sync.WaitGroup
	for i := range n {
		path := fmt.Sprintf("/v1/properties?page=%d&perPage=100", i%8+1)
		if len(ids) > 0 && i%5 != 0 {
			path = "/v1/properties/" + ids[i%len(ids)]
		}
		wg.Go(func() { out[i] = p.get(client, path) })
	}
	wg.Wait()
	return out
}

// listing is a list answer's body.
type listing struct {
	Data []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	} `json:"data"`
	Meta struct {
		Pagination struct {
			Total int `json:"total"`
		} `json:"pagination"`
	} `json:"meta"`
}

// truth is what a healthy PMS gives partners: the total and some ids.
func (p *partnerEdge) truth(t *testing.T) (total int, ids []string) {
	t.Helper()
	// A request waits at most 2 s for the first walk, then 503 asks the
	// partner to come back (docs/contract.md section 27): on a loaded
	// machine the first walk of 1,200 hotels may take longer.
	var a pmsAnswer
	testkit.Eventually(t, "the first walk served", func() bool {
		a = p.get(&http.Client{Timeout: 30 * time.Second}, "/v1/properties?perPage=100")
		return a.err != nil || a.status != http.StatusServiceUnavailable
	})
	if a.err != nil || a.status != http.StatusOK {
		t.Fatalf("healthy list: %d %v %s", a.status, a.err, a.body)
	}
	var l listing
	if err := json.Unmarshal(a.body, &l); err != nil {
		t.Fatal(err)
	}
	if l.Meta.Pagination.Total < 500 {
		t.Fatalf("healthy total %d; want the active, mappable half of the 1,200 hotels", l.Meta.Pagination.Total)
	}
	for _, d := range l.Data[:50] {
		ids = append(ids, d.ID)
	}
	return l.Meta.Pagination.Total, ids
}

// checkAnswers fails t for every answer that is not 200, names a forged
// record, or lists another total than total.
func checkAnswers(t *testing.T, round string, as []pmsAnswer, total int) {
	t.Helper()
	bad := map[string]int{}
	for _, a := range as {
		switch {
		case a.err != nil:
			bad["transport error: "+a.err.Error()]++
		case a.status != http.StatusOK:
			var p struct{ Code string }
			_ = json.Unmarshal(a.body, &p)
			bad[fmt.Sprintf("%d %s", a.status, p.Code)]++
		case strings.Contains(string(a.body), forgedName):
			bad["a forged record served"]++
		case strings.Contains(a.path, "?"):
			var l listing
			if err := json.Unmarshal(a.body, &l); err != nil || l.Meta.Pagination.Total != total {
				bad[fmt.Sprintf("total %d, want %d (%v)", l.Meta.Pagination.Total, total, err)]++
			}
		}
	}
	for what, n := range bad {
		t.Errorf("%s: %d of %d answers: %s", round, n, len(as), what)
	}
}

// checkBreakerClosed fails t when the edge's PMS breaker ever left closed.
func checkBreakerClosed(t *testing.T, p *partnerEdge) {
	t.Helper()
	if log := p.stderr.String(); strings.Contains(log, "pms circuit breaker state changed") {
		t.Errorf("the PMS breaker changed state:\n%s", grepLines(log, "breaker"))
	}
}

// checkNoInternals fails t when the edge's log quotes a PMS record's
// internal fields (net/http quotes stray bytes it finds on an idle
// connection; observability.RouteStdLog keeps only its first words).
func checkNoInternals(t *testing.T, p *partnerEdge) {
	t.Helper()
	log := p.stderr.String()
	for _, f := range pmsim.InternalFieldNames() {
		if strings.Contains(log, f) {
			t.Errorf("the edge's log names the PMS's internal field %q:\n%s", f, grepLines(log, f))
		}
	}
}

func grepLines(log, word string) string {
	var out []string
	for line := range strings.SplitSeq(log, "\n") {
		if strings.Contains(line, word) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// lifecycleCase is a PMS connection life-cycle fault played between bursts
// of partner traffic: none of it may reach a partner.
type lifecycleCase struct {
	faults rawFaults
	// between runs after each burst; the quiet in which the fault acts.
	between func(t *testing.T, s *rawPMS)
	// happened checks that the fault really was played.
	happened func(st rawStats) bool
}

func (lc lifecycleCase) run(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	for _, m := range pmsModes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			s := connPMS(t)
			p := startPartnerEdge(t, s.URL(), m.ttl)
			total, ids := p.truth(t)
			s.Set(lc.faults)
			for round := range 6 {
				lc.between(t, s)
				checkAnswers(t, fmt.Sprintf("burst %d", round+1), p.burst(60, ids), total)
			}
			checkBreakerClosed(t, p)
			checkNoInternals(t, p)
			if st := s.Stats(); !lc.happened(st) {
				t.Errorf("the fault was never played: %+v", st)
			}
		})
	}
}

// quiet waits d: long enough for the PMS's idle behaviour to act on the
// connections the last burst left open.
func quiet(d time.Duration) func(*testing.T, *rawPMS) {
	return func(*testing.T, *rawPMS) { time.Sleep(d) }
}

// A PMS that closes idle keep-alive connections (here after 150 ms, as a
// short-lived server or proxy does) between bursts: no partner error, the
// breaker stays closed.
func TestPMSIdleCloseIsNotAPartnerError(t *testing.T) {
	t.Parallel()
	lifecycleCase{
		faults:   rawFaults{IdleClose: 150 * time.Millisecond},
		between:  quiet(400 * time.Millisecond),
		happened: func(st rawStats) bool { return st.IdleClosed > 0 },
	}.run(t)
}

// A PMS restarted on the same address between bursts (every open
// connection dropped): no partner error, the breaker stays closed.
func TestPMSRestartIsNotAPartnerError(t *testing.T) {
	t.Parallel()
	lifecycleCase{
		between: func(t *testing.T, s *rawPMS) {
			if err := s.Restart(); err != nil {
				t.Fatal(err)
			}
		},
		happened: func(st rawStats) bool { return st.Restarts == 6 },
	}.run(t)
}

// A PMS (or proxy) that answers an unsolicited 408 on idle connections
// before closing them: the 408 is never taken for an answer.
func TestPMSUnsolicited408IsNotAPartnerError(t *testing.T) {
	t.Parallel()
	lifecycleCase{
		faults:   rawFaults{Idle408: 150 * time.Millisecond},
		between:  quiet(400 * time.Millisecond),
		happened: func(st rawStats) bool { return st.Sent408 > 0 },
	}.run(t)
}

// A PMS that writes a forged second answer 50 ms after each real one: the
// stray bytes arrive on an idle connection and are never read as the next
// request's answer, so no forged name, page or total reaches a partner.
func TestPMSForgedTrailingAnswerIsNeverServed(t *testing.T) {
	t.Parallel()
	lifecycleCase{
		faults:   rawFaults{ForgedAfter: 50 * time.Millisecond},
		between:  quiet(400 * time.Millisecond),
		happened: func(st rawStats) bool { return st.Forged > 0 },
	}.run(t)
}

// A PMS whose answers have endless or oversized heads: the partner gets
// 502 BAD_GATEWAY (never 504: each attempt fails as soon as the head
// passes its bound), and the edge's peak RSS stays within 64 MB of its
// footprint after a healthy warm-up.
func TestPMSEndlessHeadIs502WithinBounds(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	for _, h := range []struct {
		name string
		head rawHead
	}{
		{"endless-status-line", headEndlessStatusLine},
		{"endless-header", headEndlessHeader},
		{"repeated-header", headRepeated},
		{"distinct-headers", headDistinct},
		{"64MiB-head", headHuge},
		{"huge-informational", headHugeInformational},
	} {
		for _, m := range pmsModes {
			t.Run(h.name+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				s := connPMS(t)
				// The cached run serves no stale answer once its snapshot
				// is older than the TTL (EDGE_CACHE_STALE = TTL): then a
				// list waits for a walk, which meets the fault.
				// The claim is the answer (502, never 504) and the memory:
				// attempts wide enough that a machine whose cores other
				// work keeps busy reads 1 MiB of head before they end
				// (tests wait for events, not for the clock).
				extra := []string{"EDGE_CACHE_STALE=" + m.ttl,
					"EDGE_REQUEST_TIMEOUT=45s", "EDGE_PMS_TIMEOUT=45s", "EDGE_PMS_ATTEMPT_TIMEOUT=20s"}
				p := startPartnerEdge(t, s.URL(), m.ttl, extra...)
				warm := p.get(&http.Client{Timeout: 30 * time.Second}, "/v1/")
				if warm.status != http.StatusOK {
					t.Fatalf("warm-up: %d %s", warm.status, warm.body)
				}
				base := p.peakRSS(t)
				s.Set(rawFaults{Head: h.head})
				client := &http.Client{Timeout: 60 * time.Second}
				// 200 while the snapshot walked before the fault is younger
				// than the TTL; 503 with Retry-After while the walk on the
				// clock that meets the fault runs past a request's 2-s wait
				// (a busy machine, the race run's wider attempt:
				// docs/contract.md section 27); then the walk's 502, never
				// a 504.
				badGateway := func(path string, stale time.Time) {
					t.Helper()
					for deadline := time.Now().Add(testkit.EventuallyTimeout); ; {
						a := p.get(client, path)
						polling := (a.status == http.StatusOK && time.Now().Before(stale)) ||
							(a.status == http.StatusServiceUnavailable && a.retryAfter != "" && strings.Contains(string(a.body), "SERVICE_UNAVAILABLE"))
						if polling && time.Now().Before(deadline) {
							time.Sleep(20 * time.Millisecond) // polling for the snapshot to age, the walk to fail
							continue
						}
						if a.err != nil || a.status != http.StatusBadGateway || !strings.Contains(string(a.body), "BAD_GATEWAY") {
							t.Errorf("%s: %d %v %.200s; want 502 BAD_GATEWAY", path, a.status, a.err, a.body)
						}
						return
					}
				}
				badGateway("/v1/properties", time.Now().Add(20*time.Second))
				badGateway("/v1/properties/"+"3f2504e0-4f89-41d3-9a0c-0305e82c3301", time.Now())
				if grown := p.peakRSS(t) - base; grown > 64<<20 {
					t.Errorf("peak RSS grew by %d MB; want under 64 MB", grown>>20)
				}
				if st := s.Stats(); st.BadHeads == 0 {
					t.Errorf("no bad head was written: %+v", st)
				}
			})
		}
	}
}

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
)

// docs/contract.md section 17: every walk, the live
// edge's, the shadow candidate's and edge pms check's, holds at most its
// bound of PMS data plus a constant, however often it runs. The tests run
// the real binary as a child (RSS is a process property) with small bounds
// (32 MiB, 16 MiB for the candidate) and pages in proportion (1 MiB for
// the default's 8 MiB), against a PMS that makes its pages up as it writes
// them: it holds none of them.

const (
	testWalkBound      = 32 << 20 // EDGE_PMS_MAX_WALK_BYTES of the tests
	testCandidateBound = 16 << 20 // PMS_CANDIDATE_MAX_WALK_BYTES of the tests
	testPageBytes      = 1 << 20  // a page, as 8 MiB is to the default bound
)

// generatedPMS serves the brand aurora's list in pages of about pageBytes
// of valid records (200-character names, unique ids), whatever limit the
// edge asks, written as they are made up, until total bytes have been served (negative: never, every
// page hands out a next cursor). The get route answers 404. It counts the
// pages it served.
func generatedPMS(t testing.TB, pageBytes, total int64) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var pages atomic.Int64
	h := generatedHandler(pageBytes, total)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/brands/aurora/hotels") {
			pages.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &pages
}

// generatedHandler is generatedPMS's handler.
func generatedHandler(pageBytes, total int64) http.Handler {
	name := strings.Repeat("n", 200)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/brands/aurora/hotels") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":"hotel_not_found"}`)
			return
		}
		page, _ := strconv.ParseInt(strings.TrimPrefix(r.URL.Query().Get("cursor"), "c"), 10, 64)
		w.Header().Set("Content-Type", "application/json")
		bw := bufio.NewWriterSize(w, 64<<10)
		n, _ := io.WriteString(bw, `{"hotels":[`)
		written := int64(n)
		for i := 0; written < pageBytes && (total < 0 || page*pageBytes+written < total); i++ {
			if i > 0 {
				_ = bw.WriteByte(',')
				written++
			}
			n, _ := fmt.Fprintf(bw, `{"hotel_id":"3f2504e0-4f89-41d3-%04x-%012x","brand_code":"aurora","display_name":"%s","lifecycle":"LIVE","time_zone":"Europe/Berlin","created_at":"2019-05-01T10:00:00Z","last_modified_ms":1700000000000}`,
				i>>16&0xffff, page<<16|int64(i&0xffff), name)
			written += int64(n)
		}
		if total >= 0 && (page+1)*pageBytes >= total {
			_, _ = io.WriteString(bw, `],"nextCursor":null}`)
		} else {
			_, _ = fmt.Fprintf(bw, `],"nextCursor":"c%d"}`, page+1)
		}
		_ = bw.Flush()
	})
}

// rssLimit is what a walk may reach: the process's footprint before it
// (baseline) plus 1.5 times the walk's bound (docs/contract.md section 17).
func rssLimit(baseline, bound int64) int64 { return baseline + bound*3/2 }

// docs/contract.md section 17: an endless list of pages makes each walk fail at the
// bound (502), and three walks in a row keep the process's peak RSS under
// its footprint plus 1.5 times the bound. Before the change, the second
// walk stacked on the garbage of the first. The RSS is the child
// process's, so the test runs beside the others (each walk makes up and
// parses 32 MiB: the package's longest test, it held up every other).
func TestRepeatedBoundedWalksStayUnderBound(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	pms, pages := generatedPMS(t, testPageBytes, -1)
	keysFile, token := keystest.Live(t, "aurora")
	p := startEdgeProc(t, bin, []string{
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora",
		"EDGE_KEYS_FILE=" + keysFile, "PMS_BASE_URL=" + pms.URL, "EDGE_DOCS_URL=" + testDocsURL,
		"EDGE_CACHE_TTL=0", // every request walks
		"EDGE_PMS_MAX_WALK_BYTES=" + strconv.Itoa(testWalkBound),
		"EDGE_REQUEST_TIMEOUT=60s", "EDGE_PMS_TIMEOUT=60s", "EDGE_PMS_ATTEMPT_TIMEOUT=30s",
	})
	baseline := p.peakRSS(t)
	limit := rssLimit(baseline, testWalkBound)
	for walk := 1; walk <= 3; walk++ {
		before := pages.Load()
		code := p.getPolling(t, "/v1/properties?perPage=1", token, limit)
		rss := p.peakRSS(t)
		t.Logf("walk %d: %d after %d pages; peak RSS %d MB (baseline %d MB, limit %d MB)",
			walk, code, pages.Load()-before, rss>>20, baseline>>20, limit>>20)
		if code != http.StatusBadGateway {
			t.Fatalf("walk %d answered %d; want 502 at the bound", walk, code)
		}
		if rss > limit {
			t.Fatalf("walk %d: peak RSS %d MB; want under %d MB (baseline %d MB + 1.5 x %d MiB)",
				walk, rss>>20, limit>>20, baseline>>20, testWalkBound>>20)
		}
	}
}

// getPolling is the status of GET path with token; the process is killed
// and the test fails at once when its peak RSS passes maxRSS meanwhile.
func (p *edgeBin) getPolling(t *testing.T, path, token string, maxRSS int64) int {
	t.Helper()
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("GET", "http://"+p.addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("User-Agent", "e2e/1.0")
		res, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
		if err != nil {
			done <- 0
			return
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		done <- res.StatusCode
	}()
	for {
		select {
		case code := <-done:
			return code
		case <-time.After(20 * time.Millisecond): // poll interval: the process's peak RSS while its answer is awaited
			if rss := p.peakRSS(t); rss > maxRSS {
				_ = p.cmd.Process.Kill()
				t.Fatalf("peak RSS reached %d MB (limit %d MB); killed", rss>>20, maxRSS>>20)
			}
		}
	}
}

// docs/contract.md section 17: a shadow candidate answering more valid records than
// its bound (PMS_CANDIDATE_MAX_WALK_BYTES), or an endless list, costs the
// edge at most 1.5 times that bound over its footprint, and /shadow
// reports the candidate's walk as over its bound. Before the change the
// candidate walked under the live bound (256 MiB) and held everything.
func TestShadowCandidateWalkIsBounded(t *testing.T) {
	t.Parallel() // the RSS measured is the child process's
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	for _, tc := range []struct {
		name  string
		total int64
	}{
		// 112 MB of valid records against the default 64 MiB, in proportion.
		{"valid records past the bound", 28 << 20},
		{"endless pages", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live, _ := generatedPMS(t, testPageBytes, 64<<10) // a small live brand
			cand, pages := generatedPMS(t, testPageBytes, tc.total)
			keysFile, token := keystest.Live(t, "aurora")
			p := startEdgeProc(t, bin, []string{
				"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=127.0.0.1:0", "EDGE_BRAND=aurora",
				"EDGE_KEYS_FILE=" + keysFile, "PMS_BASE_URL=" + live.URL, "EDGE_DOCS_URL=" + testDocsURL,
				"PMS_CANDIDATE_URL=" + cand.URL,
				"PMS_CANDIDATE_MAX_WALK_BYTES=" + strconv.Itoa(testCandidateBound),
				// Generous deadlines: the candidate walks on a thread at the
				// lowest priority, which beside busy cores (and -race) may
				// wait seconds for a CPU; the bound, not a deadline, must end
				// its walk.
				"EDGE_CACHE_TTL=1h", "EDGE_CACHE_STALE=2h", "EDGE_PMS_TIMEOUT=150s", "EDGE_PMS_ATTEMPT_TIMEOUT=120s",
				"EDGE_REQUEST_TIMEOUT=150s",
			})
			admin := waitAdmin(t, p.stderr)
			baseline := p.peakRSS(t)
			limit := rssLimit(baseline, testCandidateBound)
			if code := p.getPolling(t, "/v1/properties?perPage=1", token, limit); code != http.StatusOK {
				t.Fatalf("partner answer %d; want 200", code)
			}
			var got *shadowComparison
			deadline := time.Now().Add(180 * time.Second)
			for got == nil {
				if rss := p.peakRSS(t); rss > limit {
					_ = p.cmd.Process.Kill()
					t.Fatalf("peak RSS reached %d MB after %d candidate pages (limit %d MB: baseline %d MB + 1.5 x %d MiB); killed",
						rss>>20, pages.Load(), limit>>20, baseline>>20, testCandidateBound>>20)
				}
				got = latestShadow(t, admin)
				if time.Now().After(deadline) {
					t.Fatalf("no candidate comparison within 180 s; log:\n%s", p.stderr.String())
				}
				time.Sleep(20 * time.Millisecond) // outside event: the edge's candidate walk ending
			}
			rss := p.peakRSS(t)
			t.Logf("candidate %q (%s) after %d pages; peak RSS %d MB (baseline %d MB, limit %d MB)",
				got.Candidate, got.Error, pages.Load(), rss>>20, baseline>>20, limit>>20)
			if got.Candidate != "failed" || got.Error != "walk_over_bound" || got.MaxWalkBytes != testCandidateBound {
				t.Errorf("/shadow says candidate %q, error %q, maxWalkBytes %d; want failed, walk_over_bound, %d",
					got.Candidate, got.Error, got.MaxWalkBytes, testCandidateBound)
			}
			if rss > limit {
				t.Errorf("peak RSS %d MB; want under %d MB", rss>>20, limit>>20)
			}
		})
	}
}

// shadowComparison is the part of a /shadow comparison these tests read.
type shadowComparison struct {
	Candidate    string `json:"candidate"`
	Error        string `json:"error"`
	MaxWalkBytes int64  `json:"maxWalkBytes"`
}

// latestShadow is the live mode's comparison on /shadow, nil while none.
func latestShadow(t *testing.T, admin string) *shadowComparison {
	t.Helper()
	res, err := http.Get(admin + "/shadow")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st struct {
		Comparisons []*shadowComparison `json:"comparisons"`
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if len(st.Comparisons) == 0 {
		return nil
	}
	return st.Comparisons[0]
}

// docs/contract.md section 17: edge pms check on an endless list, and on valid
// records of less than its bound, peaks under its footprint (a check of a
// small brand) plus 1.5 times the bound. Before the change it kept every body twice (the
// client's and the recorder's) and decoded them again for the schema.
func TestPMSCheckWalkIsBounded(t *testing.T) {
	t.Parallel() // the RSS measured is the child process's
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	small, _ := generatedPMS(t, testPageBytes, 64<<10)
	// The footprint is the larger of two checks of the small brand: one
	// peak alone read 21 to 27 MB on a busy machine (when the collector
	// ran), and a low one made the limit fail a walk whose peak had not
	// moved (70 MB at 0b5ebfe and after).
	baseline, _, _ := pmsCheckPeak(t, bin, small.URL)
	if again, _, _ := pmsCheckPeak(t, bin, small.URL); again > baseline {
		baseline = again
	}
	limit := rssLimit(baseline, testWalkBound)
	for _, tc := range []struct {
		name  string
		total int64
		ok    bool
	}{
		{"endless pages", -1, false},
		// 112 MB of valid records against the default 256 MiB, in proportion.
		{"valid records within the bound", 14 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pms, pages := generatedPMS(t, testPageBytes, tc.total)
			rss, out, code := pmsCheckPeak(t, bin, pms.URL)
			t.Logf("%d pages; exit %d; peak RSS %d MB (baseline %d MB, limit %d MB)", pages.Load(), code, rss>>20, baseline>>20, limit>>20)
			// Exit 1 either way: pages larger than the limit asked break
			// the paging rule; the walk itself fails only past the bound.
			if code != 1 || tc.ok == strings.Contains(out, "list walk larger than") {
				t.Errorf("exit %d, want 1, and the walk failing only past the bound; report:\n%s", code, out)
			}
			if rss > limit {
				t.Errorf("peak RSS %d MB; want under %d MB (baseline %d MB + 1.5 x %d MiB)",
					rss>>20, limit>>20, baseline>>20, testWalkBound>>20)
			}
		})
	}
}

// pmsCheckPeak runs edge pms check on pms with the tests' walk bound and
// returns its peak RSS, its output and its exit status. The peak is the
// child's VmHWM (a high-water mark), read every 5 ms while it runs and
// before each read of its report. (The kernel's account at exit,
// rusage's maxrss, would not do: it starts from the RSS of the process
// that started the child, this test's.)
func pmsCheckPeak(t *testing.T, bin, pms string) (int64, string, int) {
	t.Helper()
	cmd := exec.Command(bin, "pms", "check", "--gets", "0")
	cmd.Env = []string{"EDGE_BRAND=aurora", "PMS_BASE_URL=" + pms,
		"EDGE_PMS_MAX_WALK_BYTES=" + strconv.Itoa(testWalkBound),
		"EDGE_PMS_TIMEOUT=60s", "EDGE_PMS_ATTEMPT_TIMEOUT=30s"}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var peak atomic.Int64
	sample := func() {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)); err == nil {
			for line := range strings.SplitSeq(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
					peak.Store(max(peak.Load(), kb<<10))
				}
			}
		}
	}
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond): // poll interval: the child's peak RSS while it works
				sample()
			}
		}
	}()
	var out strings.Builder
	buf := make([]byte, 32<<10)
	for {
		sample()
		n, err := stdout.Read(buf)
		out.Write(buf[:n])
		if err != nil {
			break
		}
	}
	close(stop)
	<-polled
	err = cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("edge pms check: %v\n%s", err, stderr.String())
	}
	return peak.Load(), out.String() + stderr.String(), cmd.ProcessState.ExitCode()
}

package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// endlessPMS answers every list page with about 7.6 MB of valid records and
// a next cursor, for ever; it counts the pages served.
func endlessPMS(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var rec strings.Builder
	name := strings.Repeat("n", 200)
	rec.WriteString(`{"hotels":[`)
	for i := 0; rec.Len() < 7_600_000; i++ {
		if i > 0 {
			rec.WriteByte(',')
		}
		fmt.Fprintf(&rec, `{"hotel_id":"3f2504e0-4f89-41d3-9a0c-%012x","brand_code":"aurora","display_name":"%s","lifecycle":"LIVE","time_zone":"Europe/Berlin","created_at":"2019-05-01T10:00:00Z"}`, i, name)
	}
	page := rec.String()
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/hotels") {
			http.NotFound(w, r)
			return
		}
		n := pages.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `%s],"nextCursor":"c%d"}`, page, n)
	}))
	t.Cleanup(srv.Close)
	return srv, &pages
}

// docs/contract.md section 15, against the real edge binary: a PMS
// whose list never ends, in pages of 7.6 MB, makes the walk fail at the
// default bound of 256 MiB: the partner gets 502, the failure is logged,
// and the process's peak RSS stays under 400 MB.
func TestEndlessPMSListIsBounded(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the edge binary")
	}
	bin := buildEdge(t)
	pms, pages := endlessPMS(t)
	keysFile, token := keystest.Live(t, "aurora")
	p := startEdgeProc(t, bin, []string{
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora",
		"EDGE_KEYS_FILE=" + keysFile, "PMS_BASE_URL=" + pms.URL, "EDGE_DOCS_URL=" + testDocsURL, "PMS_TOKEN=pms-secret-token",
		// Room for the whole walk on a busy machine: the bound, not the
		// deadline, must end it.
		"EDGE_REQUEST_TIMEOUT=60s", "EDGE_PMS_TIMEOUT=60s", "EDGE_PMS_ATTEMPT_TIMEOUT=30s",
		// The walk's failure is the 502's access line (its error field):
		// with the other logs on stderr, where this test reads.
		"EDGE_ACCESS_LOG=stderr",
	})
	type answer struct {
		code int
		body string
	}
	// While the walk goes on, a request waits 2 s and gets 503 with a
	// Retry-After (docs/contract.md section 24); the partner asks again
	// until the walk has failed: then 502.
	done := make(chan answer, 1)
	go func() {
		for {
			req, _ := http.NewRequest("GET", "http://"+p.addr+"/v1/properties?perPage=1", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("User-Agent", "e2e/1.0")
			res, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
			if err != nil {
				done <- answer{0, err.Error()}
				return
			}
			res.Body.Close()
			if res.StatusCode == http.StatusServiceUnavailable && res.Header.Get("Retry-After") != "" {
				continue // the walk is under way
			}
			var b strings.Builder
			_, _ = fmt.Fprint(&b, res.Header.Get("Content-Type"))
			done <- answer{res.StatusCode, b.String()}
			return
		}
	}()
	var got answer
	for waiting := true; waiting; {
		select {
		case got = <-done:
			waiting = false
		case <-time.After(20 * time.Millisecond): // poll interval: the process's peak RSS while its answer is awaited
			if rss := p.peakRSS(t); rss > 400<<20 {
				_ = p.cmd.Process.Kill()
				t.Fatalf("peak RSS reached %d MB after %d pages of 7.6 MB; killed", rss>>20, pages.Load())
			}
		}
	}
	rss, read := p.peakRSS(t), pages.Load() // the next walk begins a back-off after the failure
	t.Logf("answer %d after %d pages of 7.6 MB; peak RSS %d MB", got.code, read, rss>>20)
	if got.code != http.StatusBadGateway {
		t.Errorf("answer %d (%s); want 502", got.code, got.body)
	}
	if n := read; n > 40 {
		t.Errorf("%d pages of 7.6 MB read; the 256 MiB bound is about 35", n)
	}
	if rss > 400<<20 {
		t.Errorf("peak RSS %d MB; want under 400 MB", rss>>20)
	}
	// The failure is logged (possibly just after the answer went out).
	testkit.Eventually(t, "the walk's failure logged with its bound", func() bool {
		return strings.Contains(p.stderr.String(), "list walk larger than 268435456 bytes")
	})
}

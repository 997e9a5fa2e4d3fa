package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// docs/operations.md, "What to watch": logs sized for a brand. Through the built
// binary, ten walks of a PMS with 2,500 unmappable records (of 20,000) write
// one line each at INFO, with the counts per reason and a few ids, and no
// line per rejected record: the log at INFO and above holds the start-up
// lines and at most a few lines per walk.
func TestWalkLogsAreSizedForABrand(t *testing.T) {
	t.Parallel()
	const hotels, walks = 20000, 10
	sim := pmsim.New(pmsim.Config{Seed: 11, HotelsPerBrand: hotels, PageSize: 500})
	pms := httptest.NewServer(sim)
	t.Cleanup(pms.Close)
	keysFile, key := keystest.Live(t, "aurora")
	p := startEdgeProc(t, buildEdge(t), []string{
		"EDGE_ADDR=127.0.0.1:0", "EDGE_ADMIN_ADDR=", "EDGE_BRAND=aurora", "EDGE_KEYS_FILE=" + keysFile,
		"PMS_BASE_URL=" + pms.URL, "EDGE_DOCS_URL=" + testDocsURL, "EDGE_ACCESS_LOG=off",
		"EDGE_CACHE_TTL=100ms", "EDGE_LOG_LEVEL=info",
	})
	list := "http://" + p.addr + "/v1/properties?perPage=1"
	finished := func() int { return strings.Count(p.stderr.String(), `"msg":"pms walk finished"`) }
	// Partners calling keep the walks going, one per TTL. The wait is for
	// progress: each walk has its own timeout, so a machine whose cores
	// other work keeps busy takes longer, never fails.
	deadline, seen := time.Now().Add(testkit.EventuallyTimeout), 0
	for n := finished(); n < walks; n = finished() {
		if n > seen {
			deadline, seen = time.Now().Add(testkit.EventuallyTimeout), n
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d walks finished, none in the last %s; want %d", n, testkit.EventuallyTimeout, walks)
		}
		call(t, list, key)
	}

	var atInfo, perRecord, walkLines int
	byMsg := map[string]int{}
	for line := range strings.Lines(p.stderr.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if lvl, _ := m["level"].(string); lvl == "DEBUG" {
			continue
		}
		atInfo++
		msg, _ := m["msg"].(string)
		byMsg[msg]++
		if _, ok := m["hotel_id"]; ok {
			perRecord++
		}
		if msg != "pms walk finished" {
			continue
		}
		walkLines++
		by, _ := m["rejected_by"].(map[string]any)
		var n float64
		for _, v := range by {
			n += v.(float64)
		}
		if n != float64(pmsim.Unmappable(hotels)) || m["rejected"] != n {
			t.Errorf("walk line counts %v by reason (%v in all), want %d: %s", by, m["rejected"], pmsim.Unmappable(hotels), line)
		}
		ex, _ := m["rejected_examples"].(map[string]any)
		if len(ex) == 0 {
			t.Errorf("walk line names no example ids: %s", line)
		}
	}
	if perRecord != 0 {
		t.Errorf("%d lines at INFO and above name a rejected record (the same records on every walk)", perRecord)
	}
	// The start-up lines, then at most a few per walk.
	if limit := 15 + 2*walkLines; atInfo > limit {
		t.Errorf("%d lines at INFO and above for %d walks, want at most %d; by message: %v", atInfo, walkLines, limit, byMsg)
	}
	t.Logf("%d lines at INFO and above for %d walks of %d records (%d unmappable); by message: %v",
		atInfo, walkLines, hotels, pmsim.Unmappable(hotels), byMsg)
}

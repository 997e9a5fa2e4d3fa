package edge_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

var requestIDField = regexp.MustCompile(`"requestId":"req_[A-Za-z0-9]+"`)

// sameAnswer: a and b are the same answer but for meta.requestId.
func sameAnswer(a, b []byte) bool {
	norm := func(x []byte) []byte {
		// Each list of the harness walks the simulator: the events cursor
		// is the position at that walk's snapshot.
		x = eventsNextField.ReplaceAll(x, []byte(`"next":"evt_X"`))
		return requestIDField.ReplaceAll(x, []byte(`"requestId":"req_X"`))
	}
	return bytes.Equal(norm(a), norm(b))
}

var eventsNextField = regexp.MustCompile(`"next":"evt_[0-9a-z]+"`)

// docs/contract.md section 18: with Accept-Encoding gzip and zstd, lists (a
// pre-joined page, compressed once, and a page filtered by a key's grants,
// compressed per request) and gets come compressed and decode to the same
// bytes as the plain answer; Content-Length is the compressed length;
// Vary: Accept-Encoding on every answer that could vary; bodies under 1 KiB,
// problems and /v1/health stay plain; q-values are honoured.
func TestCompressedAnswers(t *testing.T) {
	clock := testkit.NewClock()
	h := newHarness(t, harnessOptions{now: clock.Now, pmsCallTimeout: time.Minute})
	// A property whose name is 256 CJK characters: its get is over 1 KiB.
	recs := h.live.Records(testBrand)
	var rec map[string]any
	if err := json.Unmarshal(recs[0], &rec); err != nil {
		t.Fatal(err)
	}
	rec["display_name"] = strings.Repeat("東", 256)
	big, _ := json.Marshal(rec)
	recs[0] = big
	h.live.SetRecords(testBrand, recs)
	bigID := rec["hotel_id"].(string)

	plain := func(path, key string) response {
		t.Helper()
		res := h.do(request{path: path, key: key, headers: map[string][]string{"Accept-Encoding": {"identity"}}})
		if res.status != http.StatusOK || res.header.Get("Content-Encoding") != "" {
			t.Fatalf("%s identity: %d, Content-Encoding %q", path, res.status, res.header.Get("Content-Encoding"))
		}
		return res
	}
	for _, tc := range []struct {
		name, path, key string
	}{
		{"pre-joined list", "/v1/properties?perPage=50", "live"},
		{"list, second page", "/v1/properties?perPage=10&page=2", "live"},
		{"list filtered by grants", "/v1/properties", "granted"}, // three properties: over 1 KiB
		{"get", "/v1/properties/" + bigID, "live"},
	} {
		want := plain(tc.path, tc.key)
		if len(want.body) < 1024 {
			t.Fatalf("%s: plain answer of %d bytes; the test wants one of 1 KiB or more", tc.name, len(want.body))
		}
		if got := want.header.Get("Vary"); got != "Accept-Encoding" {
			t.Errorf("%s plain: Vary = %q", tc.name, got)
		}
		for _, ae := range []struct{ send, coding string }{
			{"gzip", "gzip"}, {"zstd", "zstd"}, {"gzip, deflate, br, zstd", "zstd"},
			{"zstd;q=0.5, gzip", "gzip"}, {"gzip;q=0.2, zstd;q=0.3", "zstd"}, {"br, *;q=0.1, zstd;q=0", "gzip"},
		} {
			for round := range 2 { // the second is a cached page's second use
				res := h.do(request{path: tc.path, key: tc.key, headers: map[string][]string{"Accept-Encoding": {ae.send}}})
				if res.status != http.StatusOK {
					t.Fatalf("%s %q: %d", tc.name, ae.send, res.status)
				}
				if got := res.header.Get("Content-Encoding"); got != ae.coding {
					t.Errorf("%s %q: Content-Encoding %q, want %q", tc.name, ae.send, got, ae.coding)
					continue
				}
				if got := res.header.Get("Vary"); got != "Accept-Encoding" {
					t.Errorf("%s %q: Vary = %q", tc.name, ae.send, got)
				}
				if got := res.header.Get("Content-Length"); got != strconv.Itoa(len(res.raw)) {
					t.Errorf("%s %q: Content-Length %s, body %d bytes", tc.name, ae.send, got, len(res.raw))
				}
				if len(res.raw) >= len(res.body) {
					t.Errorf("%s %q: %d bytes compressed from %d", tc.name, ae.send, len(res.raw), len(res.body))
				}
				if !sameAnswer(res.body, want.body) {
					t.Errorf("%s %q round %d: decodes to\n%s\nwant\n%s", tc.name, ae.send, round, short(res.body), short(want.body))
				}
			}
		}
		// Nothing acceptable: identity.
		for _, ae := range []string{"br", "gzip;q=0, zstd;q=0", "identity;q=0", "gzip;q=0.5, identity"} {
			res := h.do(request{path: tc.path, key: tc.key, headers: map[string][]string{"Accept-Encoding": {ae}}})
			if res.header.Get("Content-Encoding") != "" || !sameAnswer(res.body, want.body) {
				t.Errorf("%s %q: Content-Encoding %q, want identity", tc.name, ae, res.header.Get("Content-Encoding"))
			}
		}
	}

	// Under 1 KiB: plain, but the answer could vary (identity;q=0).
	small := h.do(request{path: "/v1/", key: "live", headers: map[string][]string{"Accept-Encoding": {"gzip, zstd"}}})
	if small.status != http.StatusOK || small.header.Get("Content-Encoding") != "" || len(small.raw) >= 1024 {
		t.Errorf("/v1/ (%d bytes) with gzip: %d, Content-Encoding %q; want plain", len(small.raw), small.status, small.header.Get("Content-Encoding"))
	}
	if small.header.Get("Vary") != "Accept-Encoding" {
		t.Errorf("/v1/: Vary = %q", small.header.Get("Vary"))
	}
	refused := h.do(request{path: "/v1/", key: "live", headers: map[string][]string{"Accept-Encoding": {"gzip, identity;q=0"}}})
	if refused.header.Get("Content-Encoding") != "gzip" || !sameAnswer(refused.body, small.body) {
		t.Errorf("/v1/ with identity;q=0: Content-Encoding %q, want gzip", refused.header.Get("Content-Encoding"))
	}
	// A page with no item ({"data":[]...}): plain.
	empty := h.do(request{path: "/v1/properties?page=99", key: "live", headers: map[string][]string{"Accept-Encoding": {"gzip"}}})
	if empty.status != http.StatusOK || empty.header.Get("Content-Encoding") != "" {
		t.Errorf("empty page: %d, Content-Encoding %q", empty.status, empty.header.Get("Content-Encoding"))
	}

	// Problems and health: plain, always.
	for _, req := range []request{
		{path: "/v1/properties?perPage=500", key: "live"},
		{path: "/v1/no-such-route", key: "live"},
		{path: "/v1/properties", key: "no-such-key"},
		{path: "/v1/health"},
	} {
		req.headers = map[string][]string{"Accept-Encoding": {"gzip, identity;q=0"}}
		res := h.do(req)
		if res.header.Get("Content-Encoding") != "" {
			t.Errorf("%s: %d with Content-Encoding %q, want plain", req.path, res.status, res.header.Get("Content-Encoding"))
		}
	}
}

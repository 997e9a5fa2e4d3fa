package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
)

// docs/contract.md section 15, end to end: a PMS on loopback lists a property whose
// name is 7 MB beside a normal one. The edge never serves it (not in the
// list, 404 by id), and counts the rejection with reason too_long.
func TestOversizedPMSNameNeverServed(t *testing.T) {
	const (
		goodID = "3f2504e0-4f89-41d3-9a0c-000000000001"
		bigID  = "3f2504e0-4f89-41d3-9a0c-000000000002"
	)
	record := func(id, name string) string {
		return fmt.Sprintf(`{"hotel_id":%q,"brand_code":"aurora","display_name":%q,"lifecycle":"LIVE","time_zone":"Europe/Berlin","created_at":"2019-05-01T10:00:00Z"}`, id, name)
	}
	page := `{"hotels":[` + record(goodID, "Aurora Berlin") + "," + record(bigID, strings.Repeat("N", 7<<20)) + `],"nextCursor":null}`
	pms := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/hotels") {
			_, _ = w.Write([]byte(page))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(pms.Close)
	keysFile, token := keystest.Live(t, "aurora")
	s := start(t, map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "127.0.0.1:0", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": pms.URL, "EDGE_DOCS_URL": testDocsURL, "PMS_TOKEN": "pms-secret-token",
		// Decoding 7 MB under -race on a loaded machine can outlast the
		// default 10 s deadline; this test is about the rejection, not time.
		"EDGE_REQUEST_TIMEOUT": "2m", "EDGE_PMS_TIMEOUT": "2m", "EDGE_PMS_ATTEMPT_TIMEOUT": "2m",
	})
	base := "http://" + waitListening(t, s) + "/v1/"
	admin := waitAdmin(t, s.stderr)
	res, body := getWithKey(t, base+"properties?perPage=100", token)
	if res.StatusCode != 200 || !strings.Contains(string(body), goodID) {
		t.Fatalf("list: %d, %.300s", res.StatusCode, body)
	}
	if strings.Contains(string(body), bigID) || len(body) > 64<<10 {
		t.Errorf("the list serves the 7 MB name (%d bytes)", len(body))
	}
	if res, body := getWithKey(t, base+"properties/"+bigID, token); res.StatusCode != 404 {
		t.Errorf("get of the 7 MB-name property: %d (%d bytes); want 404", res.StatusCode, len(body))
	}
	if v, ok := value(scrape(t, admin+"/metrics"), `partner_edge_mapping_rejections_total{reason="too_long"}`); !ok || v != 1 {
		t.Errorf(`partner_edge_mapping_rejections_total{reason="too_long"} = %v (found %v); want 1`, v, ok)
	}
}

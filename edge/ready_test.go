package edge_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/partner-edge/partner-edge/edge"
)

// GET /readyz (docs/operations.md, "Deploying behind a load balancer"):
// 503 naming the cause of each check that fails, 200 once all hold; never
// cached.
func TestHandleReady(t *testing.T) {
	snapshot := false
	h := edge.HandleReady(
		edge.ReadyCheck{Name: "key file", Check: func() (bool, string) { return true, "" }},
		edge.ReadyCheck{Name: "pms live snapshot", Check: func() (bool, string) {
			if !snapshot {
				return false, "no snapshot yet"
			}
			return true, ""
		}})
	get := func() (int, map[string]any, http.Header) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("body %q: %v", rec.Body.String(), err)
		}
		return rec.Code, body, rec.Header()
	}
	code, body, hdr := get()
	if code != 503 || body["status"] != "not_ready" || hdr.Get("Cache-Control") != "no-store" || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("without a snapshot: %d %v %v", code, body, hdr)
	}
	checks := body["checks"].([]any)
	if c := checks[1].(map[string]any); c["name"] != "pms live snapshot" || c["ready"] != false || c["cause"] != "no snapshot yet" {
		t.Errorf("the failing check: %v", c)
	}
	if c := checks[0].(map[string]any); c["ready"] != true || c["cause"] != nil {
		t.Errorf("the passing check: %v", c)
	}
	snapshot = true
	if code, body, _ := get(); code != 200 || body["status"] != "ready" {
		t.Errorf("with a snapshot: %d %v", code, body)
	}
}

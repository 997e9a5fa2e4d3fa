package upstream

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// Issue 17 finding 4 (docs/contract.md section 15): a list walk stops, BAD_GATEWAY, as
// soon as its pages together pass MaxWalkBytes, whatever the page count.
func TestListHotelsWalkBytesIsBadGateway(t *testing.T) {
	f := newFakePMS(t, nil)
	pad := strings.Repeat("x", 1000)
	f.fault = func(w http.ResponseWriter, r *http.Request, n int64) bool {
		_, _ = w.Write([]byte(`{"hotels":[{"pad":"` + pad + `"}],"nextCursor":"c` + r.URL.Query().Get("cursor") + `"}`))
		return true
	}
	cfg := testConfig(f.srv.URL)
	cfg.MaxWalkBytes = 10_000 // ten pages of about 1 KB
	_, err := newTestClient(t, cfg).ListHotels(context.Background(), "aurora")
	e := wantKind(t, err, BadGateway)
	if !strings.Contains(e.Error(), "10000 bytes") {
		t.Errorf("error %q does not name the bound", e)
	}
	if n := f.calls.Load(); n != 10 {
		t.Errorf("PMS requests = %d, want 10 (the walk stops at the page that crosses the bound)", n)
	}
}

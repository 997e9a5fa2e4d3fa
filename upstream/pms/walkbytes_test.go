package pms

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"

	"github.com/partner-edge/partner-edge/mapping"
)

// docs/contract.md section 15: a list walk stops, BAD_GATEWAY, as
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
	_, err := listHotels(newTestClient(t, cfg), context.Background(), "aurora")
	e := wantKind(t, err, upstream.BadGateway)
	if !strings.Contains(e.Error(), "10000 bytes") {
		t.Errorf("error %q does not name the bound", e)
	}
	if n := f.calls.Load(); n != 10 {
		t.Errorf("PMS requests = %d, want 10 (the walk stops at the page that crosses the bound)", n)
	}
}

// docs/contract.md section 17: what a walk keeps counts against its bound as
// well as what the PMS sends. Empty records are rejected (no id), and
// each rejection is kept (OnReject): a few bytes sent cost many kept, so
// the walk fails on what it keeps, long before the bytes sent reach the
// bound, with ErrWalkOverBound as its cause; the same walk under a larger
// bound ends as before.
func TestPropertiesKeepWithinWalkBound(t *testing.T) {
	f := newFakePMS(t, nil)
	f.fault = func(w http.ResponseWriter, r *http.Request, _ int64) bool {
		// Ten pages: c1 ... c9, then the end.
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Query().Get("cursor"), "c"))
		next := fmt.Sprintf(`"c%d"`, n+1)
		if n == 9 {
			next = "null"
		}
		_, _ = fmt.Fprintf(w, `{"hotels":[%s],"nextCursor":%s}`, strings.Repeat("{},", 99)+"{}", next)
		return true
	}
	var rejected atomic.Int64
	opts := DirectOptions{Brand: "aurora", Now: testkit.NewClock().Now, OnReject: func(context.Context, *mapping.Rejection) { rejected.Add(1) }}
	cfg := testConfig(f.srv.URL)
	cfg.MaxWalkBytes = 20_000 // ten pages send about 4 KB, and keep 1000 rejections
	_, _, err := NewDirect(newTestClient(t, cfg), opts).Properties(context.Background())
	e := wantKind(t, err, upstream.BadGateway)
	if !errors.Is(err, ErrWalkOverBound) || !strings.Contains(e.Error(), "keeps more than 20000 bytes") {
		t.Errorf("error %v: want the walk over its bound in what it keeps", err)
	}
	if n := rejected.Load(); n >= 1000 {
		t.Errorf("%d rejections kept: the walk did not stop at its bound", n)
	}

	f.calls.Store(0)
	rejected.Store(0)
	cfg.MaxWalkBytes = 1 << 20
	props, _, err := NewDirect(newTestClient(t, cfg), opts).Properties(context.Background())
	if err != nil || len(props) != 0 || rejected.Load() != 1000 {
		t.Fatalf("within the bound: %d properties, %d rejections, %v; want 0, 1000, nil", len(props), rejected.Load(), err)
	}
}

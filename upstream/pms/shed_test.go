package pms

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// docs/contract.md section 11 (client level): a PMS 503 with Retry-After is
// Unavailable with that wait (clamped to 1..60 s), and no call reaches the
// PMS before it has passed (on the client's injected clock).
func TestPMSSheddingHoldsCalls(t *testing.T) {
	for _, tt := range []struct {
		header string
		want   time.Duration
	}{{"7", 7 * time.Second}, {"120", 60 * time.Second}} {
		t.Run(tt.header, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newLocalPMS(hotels(2, "aurora"))
				shedding := true
				f.fault = func(w http.ResponseWriter, r *http.Request, n int64) bool {
					if shedding {
						return status(503, "Retry-After", tt.header)(w, r, n)
					}
					return false
				}
				var ahead time.Duration // the injected clock runs ahead by this
				cfg := localConfig(f)
				cfg.Now = func() time.Time { return time.Now().Add(ahead) }
				c := newTestClient(t, cfg)
				_, err := listHotels(c, context.Background(), "aurora")
				if e := wantKind(t, err, upstream.Unavailable); e.RetryAfter != tt.want {
					t.Fatalf("RetryAfter %s, want %s", e.RetryAfter, tt.want)
				}
				calls := f.calls.Load()
				shedding = false
				ahead = tt.want - time.Second
				_, err = c.GetHotel(context.Background(), "aurora", hotelID(1))
				if e := wantKind(t, err, upstream.Unavailable); e.RetryAfter != time.Second {
					t.Fatalf("held call: RetryAfter %s, want the 1 s left", e.RetryAfter)
				}
				if f.calls.Load() != calls {
					t.Fatalf("PMS called %d times before Retry-After passed", f.calls.Load()-calls)
				}
				ahead = tt.want
				if _, err := listHotels(c, context.Background(), "aurora"); err != nil {
					t.Fatalf("after the wait: %v", err)
				}
			})
		})
	}
}

// A PMS 404 on the list route, whatever its body, is BadGateway (a wrong
// base address), and counts as a failure for the breaker.
func TestListNotFoundIsBadGateway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newLocalPMS(nil)
		f.fault = func(w http.ResponseWriter, _ *http.Request, _ int64) bool {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte("<html><body>Not Found</body></html>"))
			return true
		}
		cfg := localConfig(f)
		cfg.Breaker = BreakerConfig{ConsecutiveFailures: 1}
		c := newTestClient(t, cfg)
		_, err := listHotels(c, context.Background(), "aurora")
		wantKind(t, err, upstream.BadGateway)
		if s := c.BreakerState(); s != "open" {
			t.Fatalf("breaker %s after a list 404, want open", s)
		}
	})
}

package pms

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
)

// slowPages delays every list page by d (the PMS's time per page), or
// until the request is abandoned: the in-process transport runs the
// handler on the caller's goroutine, so a page that ignored its context
// would hold the walk past its budget.
func slowPages(d time.Duration) func(http.ResponseWriter, *http.Request, int64) bool {
	return func(_ http.ResponseWriter, r *http.Request, _ int64) bool {
		if strings.HasSuffix(r.URL.Path, "/hotels") {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return true
			}
		}
		return false
	}
}

// A walk is bounded by its own budget, WalkTimeout, never by CallTimeout
// (docs/contract.md section 24): 30 pages of 100 ms (3 s) outlast a
// CallTimeout of 1 s and are walked; a WalkTimeout of 1 s ends the same
// walk at 1 s.
func TestWalkHasABudgetOfItsOwn(t *testing.T) {
	for _, tc := range []struct {
		budget time.Duration
		kind   upstream.Kind // 0 with ok
		ok     bool
	}{{10 * time.Second, 0, true}, {time.Second, upstream.Timeout, false}} {
		t.Run(tc.budget.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newLocalPMS(hotels(30, "aurora"))
				f.fault = slowPages(100 * time.Millisecond)
				cfg := localConfig(f)
				cfg.PageSize, cfg.CallTimeout, cfg.WalkTimeout = 1, time.Second, tc.budget
				c := newTestClient(t, cfg)
				start := time.Now()
				recs, err := listHotels(c, context.Background(), "aurora")
				if tc.ok {
					if err != nil || len(recs) != 30 || time.Since(start) != 3*time.Second {
						t.Fatalf("%d records, %v after %v; want the 30 of a 3 s walk", len(recs), err, time.Since(start))
					}
					return
				}
				wantKind(t, err, tc.kind)
				if time.Since(start) != tc.budget {
					t.Fatalf("ended after %v; want the budget, %v", time.Since(start), tc.budget)
				}
			})
		})
	}
}

// The breaker counts pages, not walks: once it opens (here on a failed
// get during a walk), the walk's next page is refused at once, with no
// PMS traffic, and the walk fails Unavailable; its earlier pages counted
// as successes did not keep it closed.
func TestOpenBreakerStopsAWalkAtItsNextPage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newLocalPMS(hotels(10, "aurora"))
		var pages atomic.Int64
		gate := make(chan struct{})
		f.fault = func(w http.ResponseWriter, r *http.Request, n int64) bool {
			if !strings.HasSuffix(r.URL.Path, "/hotels") {
				return status(500)(w, r, n) // every get fails
			}
			if pages.Add(1) == 3 {
				<-gate // the walk waits on its third page while the get fails
			}
			return false
		}
		cfg := localConfig(f)
		cfg.PageSize = 1
		cfg.Breaker = BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: time.Hour}
		c := newTestClient(t, cfg)
		walked := make(chan error, 1)
		go func() { _, err := listHotels(c, context.Background(), "aurora"); walked <- err }()
		synctest.Wait()
		_, err := c.GetHotel(context.Background(), "aurora", hotelID(1))
		wantKind(t, err, upstream.BadGateway)
		if s := c.BreakerState(); s != "open" {
			t.Fatalf("breaker %s after a failed get; want open", s)
		}
		close(gate)
		wantKind(t, <-walked, upstream.Unavailable)
		if n := pages.Load(); n != 3 {
			t.Fatalf("%d page requests; want 3: none once the breaker opened", n)
		}
	})
}

// A walk counts its pages and records into the WalkStats of its context
// and calls its OnPage hooks (outer first) once per page.
func TestWalkCountsPagesAndCallsItsHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newLocalPMS(hotels(7, "aurora"))
		cfg := localConfig(f)
		cfg.PageSize = 2
		c := newTestClient(t, cfg)
		st := &upstream.WalkStats{}
		var order []string
		ctx := upstream.WithWalkStats(context.Background(), st)
		ctx = upstream.OnPage(ctx, func() { order = append(order, "outer") })
		ctx = upstream.OnPage(ctx, func() { order = append(order, "inner") })
		if _, err := listHotels(c, ctx, "aurora"); err != nil {
			t.Fatal(err)
		}
		if st.Pages() != 4 || st.Records() != 7 {
			t.Fatalf("%d pages, %d records; want 4 and 7", st.Pages(), st.Records())
		}
		if got := strings.Join(order, " "); got != strings.Repeat("outer inner ", 4)[:len(got)] || len(order) != 8 {
			t.Fatalf("hooks %q; want outer then inner, once per page", got)
		}
	})
}

// RefusalOf tells the PMS refusing the edge (its token, its address) from
// every other failure.
func TestRefusalOf(t *testing.T) {
	addr := testkit.RefusingAddr(t) // nothing listens: the connection is refused
	cfg := testConfig("http://" + addr)
	c := newTestClient(t, cfg)
	_, refused := c.GetHotel(context.Background(), "aurora", hotelID(1))

	for _, tc := range []struct {
		name          string
		err           error
		class, detail string
	}{
		{"401", &upstream.Error{Kind: upstream.BadGateway, Err: &statusError{status: 401}}, string(upstream.RefusedCredentials), "http_401"},
		{"403", &statusError{status: 403}, string(upstream.RefusedCredentials), "http_403"},
		{"500", &statusError{status: 500}, "", ""},
		{"connection refused", refused, string(upstream.Unreachable), "connection_refused"},
		{"dns", &transportError{err: &net.DNSError{Err: "no such host", Name: "pms.invalid"}}, string(upstream.Unreachable), "dns"},
		{"tls", &transportError{err: x509.UnknownAuthorityError{}}, string(upstream.Unreachable), "tls_untrusted"},
		{"reset mid-body", &transportError{err: errors.New("connection reset by peer")}, "", ""},
		{"bad answer", &answerError{reason: "not JSON"}, "", ""},
	} {
		class, detail := upstream.RefusalOf(tc.err)
		if string(class) != tc.class || detail != tc.detail {
			t.Errorf("%s: %q %q; want %q %q", tc.name, class, detail, tc.class, tc.detail)
		}
	}
}

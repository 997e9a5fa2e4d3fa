package pms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
)

func hotels(n int, brand string) []json.RawMessage {
	out := make([]json.RawMessage, n)
	for i := range out {
		out[i] = record(hotelID(i+1), brand, "LIVE", "2020-01-02T03:04:05+02:00")
	}
	return out
}

// asError asserts err is an *Error and returns it.
func asError(t *testing.T, err error) *upstream.Error {
	t.Helper()
	var e *upstream.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *upstream.Error", err, err)
	}
	return e
}

// wantKind asserts err is an *Error of kind k.
func wantKind(t *testing.T, err error, k upstream.Kind) *upstream.Error {
	t.Helper()
	e := asError(t, err)
	if e.Kind != k {
		t.Fatalf("kind = %s, want %s (cause: %v)", e.Kind, k, e.Err)
	}
	return e
}

func TestListHotelsFollowsCursorsToTheEnd(t *testing.T) {
	all := append(hotels(23, "aurora"), hotels(4, "other")...)
	f := newFakePMS(t, all)
	cfg := testConfig(f.srv.URL)
	cfg.PageSize = 5
	c := newTestClient(t, cfg)

	got, err := listHotels(c, context.Background(), "aurora")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 23 {
		t.Fatalf("got %d records, want 23", len(got))
	}
	for i, raw := range got {
		if !strings.Contains(string(raw), hotelID(i+1)) {
			t.Fatalf("record %d = %s, want id %s", i, raw, hotelID(i+1))
		}
	}
	// 23 records of the brand in pages of 5: 5 requests, and the last
	// page, which came on a reused connection, asked again on a new one
	// (confirm.go).
	if n := f.calls.Load(); n != 6 {
		t.Errorf("PMS requests = %d, want 6", n)
	}
}

func TestListHotelsDefaultLimitIs500(t *testing.T) {
	f := newFakePMS(t, hotels(3, "aurora"))
	var limit string
	f.fault = func(w http.ResponseWriter, r *http.Request, _ int64) bool {
		limit = r.URL.Query().Get("limit")
		return false
	}
	cfg := testConfig(f.srv.URL)
	if _, err := listHotels(newTestClient(t, cfg), context.Background(), "aurora"); err != nil {
		t.Fatal(err)
	}
	if limit != "500" {
		t.Errorf("limit = %q, want 500", limit)
	}
}

func TestListHotelsCursorLoopIsBadGateway(t *testing.T) {
	f := newFakePMS(t, nil)
	f.fault = func(w http.ResponseWriter, r *http.Request, n int64) bool {
		// a, b, a, ...: the PMS sends the walk around in circles.
		next := "a"
		if r.URL.Query().Get("cursor") == "a" {
			next = "b"
		}
		_, _ = w.Write([]byte(`{"hotels":[],"nextCursor":"` + next + `"}`))
		return true
	}
	c := newTestClient(t, testConfig(f.srv.URL))
	_, err := listHotels(c, context.Background(), "aurora")
	wantKind(t, err, upstream.BadGateway)
	if n := f.calls.Load(); n != 4 {
		t.Errorf("PMS requests = %d, want 4 (first, a, b, that page again on a new connection, then a again is refused)", n)
	}
}

func TestListHotelsMaxPagesIsBadGateway(t *testing.T) {
	f := newFakePMS(t, nil)
	f.fault = func(w http.ResponseWriter, r *http.Request, n int64) bool {
		_, _ = w.Write([]byte(`{"hotels":[],"nextCursor":"c` + r.URL.Query().Get("cursor") + `"}`))
		return true
	}
	cfg := testConfig(f.srv.URL)
	cfg.MaxPages = 7
	_, err := listHotels(newTestClient(t, cfg), context.Background(), "aurora")
	wantKind(t, err, upstream.BadGateway)
	if n := f.calls.Load(); n != 7 {
		t.Errorf("PMS requests = %d, want 7", n)
	}
}

func TestListHotelsWrongShapeIsBadGateway(t *testing.T) {
	for name, body := range map[string]string{
		"no hotels":      `{"nextCursor":null}`,
		"hotels null":    `{"hotels":null,"nextCursor":null}`,
		"hotels object":  `{"hotels":{},"nextCursor":null}`,
		"cursor number":  `{"hotels":[],"nextCursor":7}`,
		"empty cursor":   `{"hotels":[],"nextCursor":""}`,
		"array":          `[]`,
		"not json":       `<html>oops</html>`,
		"truncated json": `{"hotels":[{"hotel_id":"x"`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFakePMS(t, nil)
			f.fault = func(w http.ResponseWriter, _ *http.Request, _ int64) bool {
				_, _ = w.Write([]byte(body))
				return true
			}
			_, err := listHotels(newTestClient(t, testConfig(f.srv.URL)), context.Background(), "aurora")
			wantKind(t, err, upstream.BadGateway)
			if n := f.calls.Load(); n != 1 {
				t.Errorf("PMS requests = %d, want 1: an unusable answer is not retried", n)
			}
		})
	}
}

func TestBodyLargerThanLimitIsBadGateway(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		f := newFakePMS(t, nil)
		f.fault = func(w http.ResponseWriter, _ *http.Request, _ int64) bool {
			body := `{"hotels":[],"nextCursor":null,"pad":"` + strings.Repeat("x", 2000) + `"}`
			if chunked { // no Content-Length: the bound applies while reading
				w.(http.Flusher).Flush()
			}
			_, _ = w.Write([]byte(body))
			return true
		}
		cfg := testConfig(f.srv.URL)
		cfg.MaxBodyBytes = 1000
		_, err := listHotels(newTestClient(t, cfg), context.Background(), "aurora")
		wantKind(t, err, upstream.BadGateway)

		cfg.MaxBodyBytes = 4000 // the same answer within the bound is fine
		if _, err := listHotels(newTestClient(t, cfg), context.Background(), "aurora"); err != nil {
			t.Errorf("chunked=%v: within the bound: %v", chunked, err)
		}
	}
}

func TestHeadersSent(t *testing.T) {
	f := newFakePMS(t, hotels(2, "aurora"))
	c := newTestClient(t, testConfig(f.srv.URL))
	ctx := upstream.WithCallerIDs(context.Background(), upstream.CallerIDs{RequestID: "req_abc123", CorrelationID: "corr-9"})
	if _, err := c.GetHotel(ctx, "aurora", hotelID(1)); err != nil {
		t.Fatal(err)
	}
	h := f.lastHeader()
	for k, want := range map[string]string{
		"Authorization":    "Bearer pms-token-123",
		"User-Agent":       "partner-edge/1.2.3",
		"Accept":           "application/json",
		"X-Request-Id":     "req_abc123",
		"X-Correlation-Id": "corr-9",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}

	// No token configured, no correlation id: neither header is sent.
	cfg := testConfig(f.srv.URL)
	cfg.Token = ""
	ctx = upstream.WithCallerIDs(context.Background(), upstream.CallerIDs{RequestID: "req_x"})
	if _, err := listHotels(newTestClient(t, cfg), ctx, "aurora"); err != nil {
		t.Fatal(err)
	}
	h = f.lastHeader()
	if _, ok := h["Authorization"]; ok {
		t.Errorf("Authorization sent without a token: %q", h.Get("Authorization"))
	}
	if _, ok := h["X-Correlation-Id"]; ok {
		t.Errorf("X-Correlation-Id sent without one: %q", h.Get("X-Correlation-Id"))
	}
}

// The client builds its requests from scratch: whatever the partner sent
// (here, an Authorization on the partner's request) cannot reach the PMS.
func TestPartnerAuthorizationNeverForwarded(t *testing.T) {
	f := newFakePMS(t, hotels(1, "aurora"))
	partner, _ := http.NewRequest(http.MethodGet, "http://edge/v1/properties", nil)
	partner.Header.Set("Authorization", "Bearer svc_live_partnerkey0000000000000000")
	c := newTestClient(t, testConfig(f.srv.URL))
	if _, err := listHotels(c, partner.Context(), "aurora"); err != nil {
		t.Fatal(err)
	}
	for _, h := range f.headers {
		if strings.Contains(h.Get("Authorization"), "svc_") {
			t.Fatalf("partner key reached the PMS: %q", h.Get("Authorization"))
		}
	}
}

func TestPathSegmentsEscaped(t *testing.T) {
	f := newFakePMS(t, nil)
	var path string
	f.fault = func(w http.ResponseWriter, r *http.Request, _ int64) bool {
		path = r.URL.EscapedPath()
		w.WriteHeader(http.StatusNotFound)
		return true
	}
	c := newTestClient(t, testConfig(f.srv.URL+"/prefix/"))
	_, err := c.GetHotel(context.Background(), "a/b", "x?y#z/..")
	wantKind(t, err, upstream.NotFound)
	if want := "/prefix/internal/v2/brands/a%2Fb/hotels/x%3Fy%23z%2F.."; path != want {
		t.Errorf("path = %q, want %q", path, want)
	}
}

func TestGetHotel404IsNotFoundWithoutRetry(t *testing.T) {
	f := newFakePMS(t, hotels(1, "aurora"))
	cfg := testConfig(f.srv.URL)
	cfg.Breaker.ConsecutiveFailures = 2
	c := newTestClient(t, cfg)
	for range 5 {
		_, err := c.GetHotel(context.Background(), "aurora", hotelID(99))
		wantKind(t, err, upstream.NotFound)
	}
	// No retries; a 404 that came on a reused connection (every get but
	// the first) is asked again on a new one (confirm.go).
	if n := f.calls.Load(); n != 9 {
		t.Errorf("PMS requests = %d, want 9 (no retries, four 404s confirmed)", n)
	}
	if s := c.BreakerState(); s != "closed" {
		t.Errorf("breaker %s after 404s, want closed", s)
	}
	raw, err := c.GetHotel(context.Background(), "aurora", hotelID(1))
	if err != nil || !strings.Contains(string(raw), hotelID(1)) {
		t.Fatalf("GetHotel = %s, %v", raw, err)
	}
}

func TestGetHotelNotAnObjectIsBadGateway(t *testing.T) {
	f := newFakePMS(t, nil)
	f.fault = func(w http.ResponseWriter, _ *http.Request, _ int64) bool {
		_, _ = w.Write([]byte(`["not","a","record"]`))
		return true
	}
	_, err := newTestClient(t, testConfig(f.srv.URL)).GetHotel(context.Background(), "aurora", hotelID(1))
	wantKind(t, err, upstream.BadGateway)
}

func TestNewClientRejectsBadSettings(t *testing.T) {
	for _, cfg := range []ClientConfig{
		{},
		{BaseURL: "pms.internal:9000"},
		{BaseURL: "ftp://pms"},
		{BaseURL: "http://pms?x=1"},
		{BaseURL: "http://pms", PageSize: 501},
		{BaseURL: "http://pms", PageSize: -1},
		{BaseURL: "http://pms", CallTimeout: -1},
	} {
		if _, err := NewClient(cfg); err == nil {
			t.Errorf("NewClient(%+v) = nil error", cfg)
		}
	}
}

// TestGetHotel408IsRetriedOnANewConnection: a 408 is the PMS closing a
// connection our request crossed on the wire (docs/resilience.md, Retries):
// the request is repeated, on a new connection, and the call succeeds;
// also when the 408 does not say it closes the connection, which net/http
// would then reuse.
func TestGetHotel408IsRetriedOnANewConnection(t *testing.T) {
	for _, closes := range []bool{true, false} {
		t.Run(fmt.Sprintf("connection-close=%v", closes), func(t *testing.T) {
			f := newFakePMS(t, hotels(1, "aurora"))
			var conns sync.Map // remote address of each request
			f.fault = func(w http.ResponseWriter, r *http.Request, n int64) bool {
				conns.Store(n, r.RemoteAddr)
				if n == 1 {
					if closes {
						w.Header().Set("Connection", "close")
					}
					w.WriteHeader(http.StatusRequestTimeout)
					return true
				}
				return false
			}
			c := newTestClient(t, testConfig(f.srv.URL))
			raw, err := c.GetHotel(context.Background(), "aurora", hotelID(1))
			if err != nil || !strings.Contains(string(raw), hotelID(1)) {
				t.Fatalf("GetHotel after a 408 = %s, %v; want the record", raw, err)
			}
			first, _ := conns.Load(int64(1))
			second, _ := conns.Load(int64(2))
			if n := f.calls.Load(); n != 2 || first == second {
				t.Errorf("PMS requests = %d on %v then %v, want 2 on two connections", n, first, second)
			}
		})
	}
}

// A list route answering 404 (a wrong PMS_BASE_URL) is an ERROR line at
// most once a minute, with the count of walks that met it: walks are
// retried, and each meets it again (docs/operations.md, "What to watch").
func TestListNotFoundLoggedOnceAMinute(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	var logs testkit.LogBuffer
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	cfg := testConfig(srv.URL)
	cfg.Logger, cfg.Now = logs.Logger(), func() time.Time { return now }
	cfg.Breaker.ConsecutiveFailures, cfg.Breaker.FailureRatio = 1000, 2 // the breaker stays closed
	c := newTestClient(t, cfg)
	walk := func() {
		if err := c.WalkHotels(context.Background(), "aurora", func([]byte) error { return nil }); err == nil {
			t.Fatal("a walk of a 404 list route succeeded")
		}
	}
	for range 5 {
		walk()
	}
	if n := logs.Count("pms list route answered 404"); n != 1 {
		t.Fatalf("%d lines for five walks within a minute, want 1:\n%s", n, logs.String())
	}
	now = now.Add(time.Minute)
	walk()
	if n := logs.Count("pms list route answered 404"); n != 2 || !strings.Contains(logs.String(), "walks=5") {
		t.Errorf("a minute later: %d lines, want 2, the second counting 5 walks:\n%s", n, logs.String())
	}
}

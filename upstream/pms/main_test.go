package pms

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// listHotels returns every record of brand (Client.WalkHotels), each a
// copy of its bytes.
func listHotels(c *Client, ctx context.Context, brand string) ([]json.RawMessage, error) {
	var all []json.RawMessage
	err := c.WalkHotels(ctx, brand, func(rec []byte) error {
		all = append(all, bytes.Clone(rec))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return all, nil
}

// record returns a PMS HotelRecord of brand with the given id.
func record(id, brand, lifecycle, created string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"hotel_id":%q,"brand_code":%q,"display_name":"  Hotel %s ",`+
		`"short_code":"SC%s","legacy_property_code":null,"lifecycle":%q,"time_zone":"Europe/Berlin",`+
		`"created_at":%q,"internal":{"owner":"secret-owner","margin":0.31}}`,
		id, brand, id[:4], id[:2], lifecycle, created))
}

// hotelID is the n-th test UUID.
func hotelID(n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n) }

// fakePMS is a PMS on loopback implementing docs/pms-api.md sections 2
// and 3 over a fixed list, with a hook to misbehave. Cursors are offsets.
type fakePMS struct {
	hotels []json.RawMessage
	// fault, when set, may answer instead: it returns true when it did.
	// n counts requests from 1.
	fault func(w http.ResponseWriter, r *http.Request, n int64) bool

	calls   atomic.Int64
	mu      sync.Mutex
	headers []http.Header
	srv     *httptest.Server
}

func newFakePMS(t *testing.T, hotels []json.RawMessage) *fakePMS {
	t.Helper()
	f := &fakePMS{hotels: hotels}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakePMS) lastHeader() http.Header {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.headers) == 0 {
		return nil
	}
	return f.headers[len(f.headers)-1]
}

func (f *fakePMS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.calls.Add(1)
	f.mu.Lock()
	f.headers = append(f.headers, r.Header.Clone())
	f.mu.Unlock()
	if f.fault != nil && f.fault(w, r, n) {
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/internal/v2/brands/")
	parts := strings.Split(rest, "/")
	w.Header().Set("Content-Type", "application/json")
	switch {
	case ok && len(parts) == 2 && parts[1] == "hotels":
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		off, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		var page []json.RawMessage
		for _, h := range f.hotels[min(off, len(f.hotels)):] {
			if len(page) == limit {
				break
			}
			if strings.Contains(string(h), `"brand_code":"`+parts[0]+`"`) {
				page = append(page, h)
			}
			off++
		}
		var next any
		if off < len(f.hotels) {
			next = strconv.Itoa(off)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"hotels": page, "nextCursor": next})
	case ok && len(parts) == 3 && parts[1] == "hotels":
		for _, h := range f.hotels {
			if strings.Contains(strings.ToLower(string(h)), `"hotel_id":"`+strings.ToLower(parts[2])+`"`) &&
				strings.Contains(string(h), `"brand_code":"`+parts[0]+`"`) {
				_, _ = w.Write(h)
				return
			}
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":"hotel_not_found"}`))
	default:
		w.WriteHeader(http.StatusBadRequest)
	}
}

// testConfig is a client configuration with short timeouts, so that
// failure tests stay fast. Its clock starts on the tests' fixed day
// (testkit.Epoch) and moves, so breakers, holds and budgets run as on the
// wall clock (or the synctest bubble's, when made in one).
func testConfig(baseURL string) ClientConfig {
	return ClientConfig{
		BaseURL:        baseURL,
		Now:            testkit.From(testkit.Epoch),
		Token:          "pms-token-123",
		Version:        "1.2.3",
		CallTimeout:    2 * time.Second,
		WalkTimeout:    2 * time.Second,
		AttemptTimeout: 500 * time.Millisecond,
		Retry:          RetryConfig{WaitMin: 5 * time.Millisecond, WaitMax: 20 * time.Millisecond},
	}
}

func newTestClient(t *testing.T, cfg ClientConfig) *Client {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

package edge_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
)

// blockingCatalog holds every call until release is closed or the call's
// context ends; entered receives one value per call.
type blockingCatalog struct {
	entered chan struct{}
	release chan struct{}
}

func newBlockingCatalog() *blockingCatalog {
	return &blockingCatalog{entered: make(chan struct{}, 64), release: make(chan struct{})}
}

func (c *blockingCatalog) wait(ctx context.Context) error {
	c.entered <- struct{}{}
	select {
	case <-c.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *blockingCatalog) Snapshot(ctx context.Context) (*upstream.Snapshot, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	return upstream.NewSnapshot(nil, time.Now()), nil
}

func (c *blockingCatalog) Property(ctx context.Context, id string) (*upstream.Item, error) {
	if err := c.wait(ctx); err != nil {
		return nil, err
	}
	return nil, context.Canceled
}

// liveKeyStore is a key file with one live key of testBrand, and its token.
func liveKeyStore(t *testing.T) (*keys.Store, string) {
	t.Helper()
	token, rec := keystest.Mint(t, testBrand, keys.ModeLive)
	return keystest.Open(t, rec), token
}

func authGet(url, token string) (*http.Response, []byte, error) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("User-Agent", "shed-test/1.0")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	return res, body, err
}

// docs/contract.md section 10: past EDGE_MAX_CONCURRENT requests in progress the edge answers
// 503 SERVICE_UNAVAILABLE with Retry-After: 1 at once, while health is still
// served; once a slot frees, requests are served again.
func TestShedPastTheCap(t *testing.T) {
	const limit = 3
	store, token := liveKeyStore(t)
	cat := newBlockingCatalog()
	srv := httptest.NewServer(edge.NewServer(edge.Config{Brand: testBrand, DocsURL: testDocsURL, MaxConcurrent: limit,
		Now: testkit.From(testkit.Epoch)}, store, cat, nil))
	defer srv.Close()

	held := make(chan int, limit)
	for range limit {
		go func() {
			res, _, err := authGet(srv.URL+"/v1/properties", token)
			if err != nil {
				held <- 0
				return
			}
			held <- res.StatusCode
		}()
	}
	for range limit {
		<-cat.entered // every slot is taken by a request waiting on the PMS
	}

	res, body, err := authGet(srv.URL+"/v1/properties", token)
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Code string }
	_ = json.Unmarshal(body, &p)
	if res.StatusCode != 503 || p.Code != "SERVICE_UNAVAILABLE" || res.Header.Get("Retry-After") != "1" ||
		res.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("past the cap: %d Retry-After %q %s %s", res.StatusCode, res.Header.Get("Retry-After"), res.Header.Get("Content-Type"), body)
	}
	select {
	case <-cat.entered:
		t.Errorf("a shed request reached the PMS")
	default:
	}
	for range 3 { // health is never shed
		if code, body := testkit.Get(t, srv.URL+"/v1/health"); code != 200 {
			t.Errorf("health at the cap: %d %s", code, body)
		}
	}

	close(cat.release)
	for range limit {
		if code := <-held; code != 200 {
			t.Errorf("a request held in a slot answered %d", code)
		}
	}
	res, body, err = authGet(srv.URL+"/v1/properties", token)
	if err != nil || res.StatusCode != 200 {
		t.Errorf("after the slots freed: %v %s", err, body)
	}
}

// MaxConcurrent 0 disables the cap.
func TestShedDisabled(t *testing.T) {
	store, token := liveKeyStore(t)
	cat := newBlockingCatalog()
	close(cat.release)
	srv := httptest.NewServer(edge.NewServer(edge.Config{Brand: testBrand, DocsURL: testDocsURL, Now: testkit.From(testkit.Epoch)}, store, cat, nil))
	defer srv.Close()
	for range 5 {
		if res, body, err := authGet(srv.URL+"/v1/properties", token); err != nil || res.StatusCode != 200 {
			t.Fatalf("no cap: %v %s", err, body)
		}
	}
}

// docs/contract.md section 10: one overall deadline per request. A PMS that never answers is a
// 504 GATEWAY_TIMEOUT at Config.RequestTimeout (default 10 s), measured on
// the bubble's fake clock, whether the edge runs on time.Now (Now nil: its
// start read also sets the deadline) or on an injected clock (the tests'
// fixed day: the deadline is still set on time.Now's clock).
func TestRequestDeadline(t *testing.T) {
	store, token := liveKeyStore(t)
	for _, tc := range []struct {
		timeout, want time.Duration
		injected      bool
	}{
		{0, edge.DefaultRequestTimeout, false}, {3 * time.Second, 3 * time.Second, false},
		{0, edge.DefaultRequestTimeout, true}, {3 * time.Second, 3 * time.Second, true},
	} {
		synctest.Test(t, func(t *testing.T) {
			var now func() time.Time // nil: the bubble's time.Now, no calendar read
			if tc.injected {
				now = testkit.From(testkit.Epoch)
			}
			cat := newBlockingCatalog()
			h := edge.NewServer(edge.Config{Brand: testBrand, DocsURL: testDocsURL, RequestTimeout: tc.timeout, Now: now}, store, cat, nil)
			req := httptest.NewRequest(http.MethodGet, "/v1/properties", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("User-Agent", "deadline-test/1.0")
			rec := httptest.NewRecorder()
			start := time.Now()
			h.ServeHTTP(rec, req)
			var p struct{ Code string }
			_ = json.Unmarshal(rec.Body.Bytes(), &p)
			if rec.Code != 504 || p.Code != "GATEWAY_TIMEOUT" {
				t.Errorf("PMS never answering (injected clock %t): %d %s", tc.injected, rec.Code, rec.Body)
			}
			if el := time.Since(start); el != tc.want {
				t.Errorf("answered after %s (injected clock %t), want the request deadline %s", el, tc.injected, tc.want)
			}
		})
	}
}

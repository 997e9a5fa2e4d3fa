package pms

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// transitions records the breaker's OnStateChange calls.
type transitions struct {
	mu  sync.Mutex
	got []string
}

func (tr *transitions) record(from, to string) {
	tr.mu.Lock()
	tr.got = append(tr.got, from+">"+to)
	tr.mu.Unlock()
}

func (tr *transitions) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return strings.Join(tr.got, " ")
}

func TestBreakerOpensShortCircuitsAndCloses(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testBreakerOpensShortCircuitsAndCloses)
}

// Under synctest: the open timeout passes on the bubble's clock.
func testBreakerOpensShortCircuitsAndCloses(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	f := newLocalPMS(hotels(2, "aurora"))
	f.fault = func(w http.ResponseWriter, r *http.Request, n int64) bool {
		if failing.Load() {
			return status(500)(w, r, n)
		}
		return false
	}
	tr := &transitions{}
	cfg := localConfig(f)
	cfg.Breaker = BreakerConfig{ConsecutiveFailures: 3, OpenTimeout: 300 * time.Millisecond, OnStateChange: tr.record}
	c := newTestClient(t, cfg)
	ctx := context.Background()

	for i := range 3 {
		_, err := listHotels(c, ctx, "aurora")
		wantKind(t, err, upstream.BadGateway)
		if s := c.BreakerState(); (i < 2) != (s == "closed") {
			t.Fatalf("after %d failed calls: breaker %s", i+1, s)
		}
	}
	// Each failed call made 3 attempts; the third call opened the breaker.
	if n := f.calls.Load(); n != 9 {
		t.Errorf("PMS requests = %d, want 9", n)
	}

	// Open: no PMS traffic, no retries, 503 SERVICE_UNAVAILABLE at once.
	for range 10 {
		start := time.Now()
		_, err := c.GetHotel(ctx, "aurora", hotelID(1))
		pe := wantKind(t, err, upstream.Unavailable)
		if pe.RetryAfter != time.Second {
			t.Errorf("RetryAfter = %v, want 1s (300ms to go, rounded up to the minimum)", pe.RetryAfter)
		}
		if e := time.Since(start); e != 0 {
			t.Errorf("open breaker took %v to answer", e)
		}
	}
	if n := f.calls.Load(); n != 9 {
		t.Errorf("PMS requests while open = %d, want none", n-9)
	}

	// After the open timeout (on the bubble's clock), the PMS healed: the
	// probe closes it.
	time.Sleep(350 * time.Millisecond) // the bubble's clock: past the open timeout
	failing.Store(false)
	if _, err := listHotels(c, ctx, "aurora"); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if s := c.BreakerState(); s != "closed" {
		t.Errorf("breaker %s after a good probe, want closed", s)
	}
	if n := f.calls.Load(); n != 10 {
		t.Errorf("PMS requests = %d, want 10", n)
	}
	if got, want := tr.String(), "closed>open open>half-open half-open>closed"; got != want {
		t.Errorf("transitions %q, want %q", got, want)
	}
}

func TestBreakerRetryAfterCountsDownToTheProbe(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testBreakerRetryAfterCountsDownToTheProbe)
}

func testBreakerRetryAfterCountsDownToTheProbe(t *testing.T) {
	f := newLocalPMS(nil)
	f.fault = status(502)
	cfg := localConfig(f)
	cfg.Retry.MaxRetries = -1
	cfg.Breaker = BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: 5 * time.Second}
	c := newTestClient(t, cfg)
	_, err := listHotels(c, context.Background(), "aurora")
	wantKind(t, err, upstream.BadGateway)
	time.Sleep(100 * time.Millisecond) // the bubble's clock: 100 ms of the 5 s open timeout
	_, err = listHotels(c, context.Background(), "aurora")
	pe := wantKind(t, err, upstream.Unavailable)
	if pe.RetryAfter != 4900*time.Millisecond {
		t.Errorf("RetryAfter = %v, want 4.9s", pe.RetryAfter)
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("PMS requests = %d, want 1", n)
	}
}

func TestBreakerHalfOpenFailureReopens(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testBreakerHalfOpenFailureReopens)
}

func testBreakerHalfOpenFailureReopens(t *testing.T) {
	f := newLocalPMS(nil)
	f.fault = status(500)
	tr := &transitions{}
	cfg := localConfig(f)
	cfg.Retry.MaxRetries = -1
	cfg.Breaker = BreakerConfig{ConsecutiveFailures: 1, OpenTimeout: 100 * time.Millisecond, OnStateChange: tr.record}
	c := newTestClient(t, cfg)
	_, _ = listHotels(c, context.Background(), "aurora")
	time.Sleep(150 * time.Millisecond)                      // the bubble's clock: past the 100 ms open timeout
	_, err := listHotels(c, context.Background(), "aurora") // the probe fails
	wantKind(t, err, upstream.BadGateway)
	if got, want := tr.String(), "closed>open open>half-open half-open>open"; got != want {
		t.Errorf("transitions %q, want %q", got, want)
	}
	if n := f.calls.Load(); n != 2 {
		t.Errorf("PMS requests = %d, want 2", n)
	}
}

func TestBreakerOpensOnFailureRatio(t *testing.T) {
	t.Parallel()
	f := newFakePMS(t, hotels(1, "aurora"))
	var fail atomic.Bool
	f.fault = func(w http.ResponseWriter, r *http.Request, n int64) bool {
		if fail.Load() {
			return status(500)(w, r, n)
		}
		return false
	}
	cfg := testConfig(f.srv.URL)
	cfg.Retry.MaxRetries = -1
	cfg.Breaker = BreakerConfig{ConsecutiveFailures: 100, FailureRatio: 0.5, MinRequests: 10, Window: time.Minute}
	c := newTestClient(t, cfg)
	for i := 1; i <= 10; i++ {
		fail.Store(i%2 == 0) // every other call fails: never 2 failures in a row
		// Gets: a walk's last page on a reused connection is asked again
		// (confirm.go), one more outcome of its own for the breaker.
		_, _ = c.GetHotel(context.Background(), "aurora", hotelID(1))
		if s := c.BreakerState(); (i < 10) != (s == "closed") {
			t.Fatalf("after %d calls (half failed): breaker %s", i, s)
		}
	}
}

// Neither a PMS 404 nor the caller's own cancellation is a failure.
func TestBreakerIgnoresNotFoundAndCallerCancellation(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testBreakerIgnoresNotFoundAndCallerCancellation)
}

// Under synctest, the PMS served in process: a cancelled call's time is
// the bubble's, exact.
func testBreakerIgnoresNotFoundAndCallerCancellation(t *testing.T) {
	f := newLocalPMS(nil)
	started := make(chan struct{}, 10)
	f.fault = func(w http.ResponseWriter, r *http.Request, n int64) bool {
		if strings.HasSuffix(r.URL.Path, hotelID(9)) {
			return false // an unknown id: 404
		}
		started <- struct{}{}
		<-r.Context().Done() // hangs until the client gives up
		return true
	}
	cfg := localConfig(f)
	rt := &countingRT{rt: cfg.Transport}
	cfg.Transport = rt
	cfg.Breaker = BreakerConfig{ConsecutiveFailures: 1}
	c := newTestClient(t, cfg)

	for range 3 {
		_, err := c.GetHotel(context.Background(), "aurora", hotelID(9))
		wantKind(t, err, upstream.NotFound)
	}
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		start := time.Now()
		_, err := listHotels(c, ctx, "aurora")
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if k := upstream.KindOf(err); k != upstream.Canceled {
			t.Errorf("a cancelled caller got kind %s, want canceled", k)
		}
		if e := time.Since(start); e != 0 {
			t.Errorf("cancelled call took %v, want no wait at all", e)
		}
	}
	if s := c.BreakerState(); s != "closed" {
		t.Errorf("breaker %s, want closed", s)
	}
	// One attempt per call: no retry once the caller has gone.
	if n := rt.n.Load(); n != 6 {
		t.Errorf("PMS attempts = %d, want 6", n)
	}
}

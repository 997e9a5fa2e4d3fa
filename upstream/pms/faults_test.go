package pms

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/upstream"
)

// countingRT counts the attempts that leave the client.
type countingRT struct {
	rt http.RoundTripper
	n  atomic.Int64
}

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

func (c *countingRT) CloseIdleConnections() {
	if tr, ok := c.rt.(interface{ CloseIdleConnections() }); ok {
		tr.CloseIdleConnections()
	}
}

// faultCase runs one call of the fault matrix and checks the partner-visible
// outcome, the attempts and the elapsed time.
//
// A case runs in a testing/synctest bubble against the fake PMS served in
// process, so retry waits, Retry-After and deadlines pass on the bubble's
// clock and the elapsed time is exact whatever the machine's load. A case
// that needs a real connection (socket: a refused dial, a reset) runs on
// loopback through the client's default transport (NewTransport) and
// checks the outcome and the attempts, not the time.
type faultCase struct {
	cfg       func(*ClientConfig)
	fault     func(w http.ResponseWriter, r *http.Request, n int64) bool
	baseURL   string            // instead of the fake PMS (socket cases)
	transport http.RoundTripper // instead of the fake PMS in process
	socket    bool
	code      string // the Kind's name; "" for success
	attempts  int64
	minTime   time.Duration
	maxTime   time.Duration
}

func (fc faultCase) run(t *testing.T) {
	t.Helper()
	if fc.socket {
		f := newFakePMS(t, hotels(3, "aurora"))
		cfg := testConfig(f.srv.URL)
		if fc.baseURL != "" {
			cfg.BaseURL = fc.baseURL
		}
		fc.check(t, f, cfg, false)
		return
	}
	synctest.Test(t, func(t *testing.T) {
		f := newLocalPMS(hotels(3, "aurora"))
		cfg := localConfig(f)
		if fc.transport != nil {
			cfg.Transport = fc.transport
		}
		fc.check(t, f, cfg, true)
	})
}

// check makes the call through cfg and checks its outcome; timed: its
// elapsed time too.
func (fc faultCase) check(t *testing.T, f *fakePMS, cfg ClientConfig, timed bool) {
	t.Helper()
	f.fault = fc.fault
	rt := &countingRT{rt: cfg.Transport}
	if cfg.Transport != nil {
		cfg.Transport = rt
	} else { // the default transport, counted from outside
		cfg.WrapTransport = func(base http.RoundTripper) http.RoundTripper { rt.rt = base; return rt }
	}
	if fc.cfg != nil {
		fc.cfg(&cfg)
	}
	c := newTestClient(t, cfg)
	start := time.Now()
	_, err := listHotels(c, context.Background(), "aurora")
	elapsed := time.Since(start)
	if fc.code == "" {
		if err != nil {
			t.Fatalf("err = %v, want success", err)
		}
	} else {
		if e := asError(t, err); e.Kind.String() != fc.code {
			t.Errorf("kind = %s, want %s", e.Kind, fc.code)
		}
	}
	if n := rt.n.Load(); n != fc.attempts {
		t.Errorf("PMS attempts = %d, want %d", n, fc.attempts)
	}
	if timed && (elapsed < fc.minTime || elapsed > fc.maxTime) {
		t.Errorf("elapsed %v, want within [%v, %v]", elapsed, fc.minTime, fc.maxTime)
	}
}

// refused is a PMS whose every dial is refused, in process.
type refused struct{}

func (refused) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
}

func status(code int, header ...string) func(http.ResponseWriter, *http.Request, int64) bool {
	return func(w http.ResponseWriter, _ *http.Request, _ int64) bool {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte("<html>upstream trouble</html>"))
		return true
	}
}

func TestFaultPMSDown(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connections are refused
	faultCase{baseURL: "http://" + addr, socket: true, code: "bad_gateway", attempts: 3}.run(t)
	// In process, the same refusals fail fast: three attempts, backoff only.
	faultCase{transport: refused{}, code: "bad_gateway", attempts: 3, maxTime: 100 * time.Millisecond}.run(t)
}

func TestFault500s(t *testing.T) {
	t.Parallel()
	faultCase{fault: status(500), code: "bad_gateway", attempts: 3, maxTime: time.Second}.run(t)
}

func TestFaultRetryableStatuses(t *testing.T) {
	t.Parallel()
	for _, s := range []int{429, 502, 503, 504} {
		faultCase{fault: status(s), code: "bad_gateway", attempts: 3, maxTime: time.Second}.run(t)
	}
}

func TestFaultOtherStatusesNotRetried(t *testing.T) {
	t.Parallel()
	for _, s := range []int{400, 401, 403, 404, 409, 501, 204, 302} {
		faultCase{fault: status(s, "Location", "http://elsewhere.example/"), code: "bad_gateway",
			attempts: 1, maxTime: time.Second}.run(t)
	}
}

func TestFault503WithRetryAfter(t *testing.T) {
	t.Parallel()
	t.Run("honoured", func(t *testing.T) {
		t.Parallel()
		// Backoff alone would wait at most 20 ms; Retry-After: 1 makes each
		// retry wait a full second.
		faultCase{fault: status(503, "Retry-After", "1"), code: "unavailable",
			cfg:      func(c *ClientConfig) { c.CallTimeout, c.WalkTimeout = 5*time.Second, 5*time.Second },
			attempts: 3, minTime: 2 * time.Second, maxTime: 3500 * time.Millisecond}.run(t)
	})
	t.Run("beyond the cap: no retry", func(t *testing.T) {
		t.Parallel()
		faultCase{fault: status(503, "Retry-After", "3"), code: "unavailable",
			attempts: 1, maxTime: 2 * time.Second}.run(t)
	})
	t.Run("beyond the deadline: fail now", func(t *testing.T) {
		t.Parallel()
		faultCase{fault: status(429, "Retry-After", "1"), code: "unavailable",
			cfg:      func(c *ClientConfig) { c.CallTimeout, c.WalkTimeout = 1500*time.Millisecond, 1500*time.Millisecond },
			attempts: 2, minTime: time.Second, maxTime: 1400 * time.Millisecond}.run(t)
	})
	t.Run("as an HTTP date", func(t *testing.T) {
		t.Parallel()
		faultCase{fault: status(503, "Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)),
			code: "unavailable", attempts: 1, maxTime: 2 * time.Second}.run(t)
	})
}

// slow answers after d, or when the client gives up.
func slow(d time.Duration) func(http.ResponseWriter, *http.Request, int64) bool {
	return func(w http.ResponseWriter, r *http.Request, _ int64) bool {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return true
		}
		_, _ = w.Write([]byte(`{"hotels":[],"nextCursor":null}`))
		return true
	}
}

func TestFaultSlowBeyondTheDeadline(t *testing.T) {
	t.Parallel()
	t.Run("call deadline", func(t *testing.T) {
		t.Parallel()
		// Attempts of 300 ms: two time out, the third is cut by the 800 ms
		// deadline of the call.
		faultCase{fault: slow(5 * time.Second), code: "timeout",
			cfg: func(c *ClientConfig) {
				c.AttemptTimeout = 300 * time.Millisecond
				c.CallTimeout, c.WalkTimeout = 800*time.Millisecond, 800*time.Millisecond
			},
			attempts: 3, minTime: 800 * time.Millisecond, maxTime: 1500 * time.Millisecond}.run(t)
	})
	t.Run("every attempt times out", func(t *testing.T) {
		t.Parallel()
		faultCase{fault: slow(5 * time.Second), code: "timeout",
			cfg:      func(c *ClientConfig) { c.AttemptTimeout = 200 * time.Millisecond },
			attempts: 3, minTime: 600 * time.Millisecond, maxTime: 1500 * time.Millisecond}.run(t)
	})
	t.Run("the caller's earlier deadline", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, func(t *testing.T) {
			f := newLocalPMS(nil)
			f.fault = slow(5 * time.Second)
			c := newTestClient(t, localConfig(f))
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := c.GetHotel(ctx, "aurora", hotelID(1))
			wantKind(t, err, upstream.Timeout)
			if e := time.Since(start); e != 150*time.Millisecond {
				t.Errorf("elapsed %v, want the caller's 150ms", e)
			}
		})
	})
}

// stallMidBody sends the head and part of the body at once, then sends
// nothing more until the client gives up.
func stallMidBody(w http.ResponseWriter, r *http.Request, _ int64) bool {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", "100")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(`{"hotels":[`))
	http.NewResponseController(w).Flush()
	<-r.Context().Done()
	return true
}

// TestFaultBodyStallsPastTheAttemptTimeout: AttemptTimeout bounds reading
// the body too, not only the wait for the head. Over a real connection
// (the attempt deadline lives on the request's context and must reach
// net/http's body reader): each attempt is cut, and retried, long before
// the call's deadline. No time is asserted; the retries show the attempts
// were cut by their own deadline.
func TestFaultBodyStallsPastTheAttemptTimeout(t *testing.T) {
	t.Parallel()
	faultCase{fault: stallMidBody, socket: true, code: "timeout", attempts: 3,
		cfg: func(c *ClientConfig) {
			c.AttemptTimeout = 100 * time.Millisecond
			c.CallTimeout, c.WalkTimeout = time.Minute, time.Minute
		}}.run(t)
}

// resetMidBody sends the head and part of the body, then resets the
// connection.
func resetMidBody(w http.ResponseWriter, _ *http.Request, _ int64) bool {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{\"hotels\":[{\"hotel_id\":")
	_ = buf.Flush()
	time.Sleep(10 * time.Millisecond) // the fault's shape: a pause between the head and the reset; nothing waits on it (either order fails the attempt)
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // RST, not FIN
	}
	_ = conn.Close()
	return true
}

func TestFaultResetMidBody(t *testing.T) {
	t.Parallel()
	faultCase{fault: resetMidBody, socket: true, code: "bad_gateway", attempts: 3}.run(t)
}

func TestFaultMalformedJSON(t *testing.T) {
	t.Parallel()
	faultCase{fault: func(w http.ResponseWriter, _ *http.Request, _ int64) bool {
		_, _ = w.Write([]byte(`{"hotels":[{"hotel_id":"00000001-`))
		return true
	}, code: "bad_gateway", attempts: 1, maxTime: 2 * time.Second}.run(t)
}

func TestFaultOversizedBody(t *testing.T) {
	t.Parallel()
	faultCase{fault: func(w http.ResponseWriter, _ *http.Request, _ int64) bool {
		_, _ = w.Write([]byte(`{"hotels":[],"nextCursor":null,"x":"` + strings.Repeat("y", 64<<10) + `"}`))
		return true
	}, cfg: func(c *ClientConfig) { c.MaxBodyBytes = 32 << 10 },
		code: "bad_gateway", attempts: 1, maxTime: 2 * time.Second}.run(t)
}

// flapping fails the first n requests, then serves.
func flapping(n int64) func(http.ResponseWriter, *http.Request, int64) bool {
	return func(w http.ResponseWriter, r *http.Request, i int64) bool {
		if i <= n {
			return status(503)(w, r, i)
		}
		return false
	}
}

func TestFaultFlapping(t *testing.T) {
	t.Parallel()
	t.Run("heals within the retries", func(t *testing.T) {
		t.Parallel()
		faultCase{fault: flapping(2), attempts: 3, maxTime: time.Second}.run(t)
	})
	t.Run("heals after the retries", func(t *testing.T) {
		t.Parallel()
		synctest.Test(t, testHealsAfterTheRetries)
	})
}

// Under synctest: the retry waits pass on the bubble's clock.
func testHealsAfterTheRetries(t *testing.T) {
	f := newLocalPMS(hotels(3, "aurora"))
	f.fault = flapping(3)
	c := newTestClient(t, localConfig(f))
	_, err := listHotels(c, context.Background(), "aurora")
	wantKind(t, err, upstream.BadGateway)
	got, err := listHotels(c, context.Background(), "aurora")
	if err != nil || len(got) != 3 {
		t.Fatalf("after healing: %d records, %v", len(got), err)
	}
	if n := f.calls.Load(); n != 4 {
		t.Errorf("PMS requests = %d, want 4", n)
	}
}

// resendRT records ResendCount of each attempt, as an OTel wrapper would.
type resendRT struct {
	rt   http.RoundTripper
	mu   sync.Mutex
	seen []int
}

func (r *resendRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.seen = append(r.seen, ResendCount(req.Context()))
	r.mu.Unlock()
	return r.rt.RoundTrip(req)
}

func TestResendCountPerAttempt(t *testing.T) {
	synctest.Test(t, testResendCountPerAttempt)
}

// Under synctest: the retry waits pass on the bubble's clock.
func testResendCountPerAttempt(t *testing.T) {
	f := newLocalPMS(hotels(2, "aurora"))
	f.fault = flapping(2)
	cfg := localConfig(f)
	rt := &resendRT{rt: cfg.Transport}
	cfg.Transport = rt
	c := newTestClient(t, cfg)
	if _, err := c.GetHotel(context.Background(), "aurora", hotelID(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetHotel(context.Background(), "aurora", hotelID(2)); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(rt.seen); got != "[0 1 2 0]" {
		t.Errorf("resend counts %s, want [0 1 2 0]", got)
	}
	if n := ResendCount(context.Background()); n != 0 {
		t.Errorf("ResendCount outside a request = %d", n)
	}
}

package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

// rawPMS is a PMS on loopback that speaks HTTP by hand, for the wire
// faults httptest's server does not make: serve gets each connection and
// its number (from 1), and the connection is closed when serve returns.
type rawPMS struct {
	ln    net.Listener
	conns atomic.Int64
	wg    sync.WaitGroup
	done  chan struct{} // closed at cleanup: a serve blocked on it ends
}

func newRawPMS(t testing.TB, serve func(c net.Conn, br *bufio.Reader, n int64, done <-chan struct{})) *rawPMS {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &rawPMS{ln: ln, done: make(chan struct{})}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := p.conns.Add(1)
			p.wg.Go(func() {
				defer c.Close()
				serve(c, bufio.NewReader(c), n, p.done)
			})
		}
	})
	t.Cleanup(func() {
		close(p.done)
		ln.Close()
		p.wg.Wait()
	})
	return p
}

func (p *rawPMS) url() *url.URL { return &url.URL{Scheme: "http", Host: p.ln.Addr().String()} }

// readRequest reads one request's head; false at the connection's end.
func readRequest(br *bufio.Reader) bool {
	req, err := http.ReadRequest(br)
	if err != nil {
		return false
	}
	req.Body.Close()
	return true
}

const okAnswer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

// get sends one GET through rt and returns the body read to its end.
func get(ctx context.Context, t *testing.T, rt http.RoundTripper, u *url.URL) ([]byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String()+"/internal/v2/brands/aurora/hotels", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, errors.New(resp.Status)
	}
	return io.ReadAll(resp.Body)
}

func TestH1ReusesConnectionsReadToTheirEnd(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"hotels":[]}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	tr := newH1Transport(u, time.Minute)
	defer tr.CloseIdleConnections()
	for i := range 5 {
		body, err := get(context.Background(), t, tr, u)
		if err != nil || string(body) != `{"hotels":[]}` {
			t.Fatalf("get %d: %q, %v", i, body, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("5 gets read to their end used %d connections, want 1", n)
	}
	// A body closed before its end closes its connection.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/x", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := get(context.Background(), t, tr, u); err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 2 {
		t.Fatalf("after a body closed unread: %d connections, want 2", n)
	}
}

func TestH1SendsAgainWhenThePMSClosedAnIdleConnection(t *testing.T) {
	var requests atomic.Int64
	p := newRawPMS(t, func(c net.Conn, br *bufio.Reader, n int64, _ <-chan struct{}) {
		for readRequest(br) {
			requests.Add(1)
			io.WriteString(c, okAnswer)
			if n == 1 {
				return // closes the connection it just kept alive
			}
		}
	})
	tr := newH1Transport(p.url(), time.Minute)
	defer tr.CloseIdleConnections()
	for i := range 2 {
		if body, err := get(context.Background(), t, tr, p.url()); err != nil || string(body) != "{}" {
			t.Fatalf("get %d: %q, %v", i, body, err)
		}
	}
	if n := p.conns.Load(); n != 2 {
		t.Fatalf("connections = %d, want 2 (the closed one, then a new one)", n)
	}
}

func TestH1DoesNotSendAgainAfterPartOfAnAnswer(t *testing.T) {
	p := newRawPMS(t, func(c net.Conn, br *bufio.Reader, n int64, _ <-chan struct{}) {
		for i := 0; readRequest(br); i++ {
			if i == 1 {
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Le")
				return
			}
			io.WriteString(c, okAnswer)
		}
	})
	tr := newH1Transport(p.url(), time.Minute)
	defer tr.CloseIdleConnections()
	if _, err := get(context.Background(), t, tr, p.url()); err != nil {
		t.Fatal(err)
	}
	if _, err := get(context.Background(), t, tr, p.url()); err == nil {
		t.Fatal("a cut answer succeeded")
	}
	if n := p.conns.Load(); n != 1 {
		t.Fatalf("connections = %d, want 1: part of an answer arrived, so it was not sent again", n)
	}
}

// hang reads one request, reports it and waits for the test's end.
func hang(got chan<- struct{}) func(net.Conn, *bufio.Reader, int64, <-chan struct{}) {
	return func(c net.Conn, br *bufio.Reader, _ int64, done <-chan struct{}) {
		if readRequest(br) {
			got <- struct{}{}
			<-done
		}
	}
}

func TestH1CancelEndsTheAttempt(t *testing.T) {
	got := make(chan struct{}, 1)
	p := newRawPMS(t, hang(got))
	tr := newH1Transport(p.url(), time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-got; cancel() }()
	_, err := get(ctx, t, tr, p.url())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestH1BoundsEachAttempt(t *testing.T) {
	got := make(chan struct{}, 2)
	p := newRawPMS(t, hang(got))
	t.Run("attempt timeout", func(t *testing.T) {
		tr := newH1Transport(p.url(), 50*time.Millisecond)
		_, err := get(context.Background(), t, tr, p.url())
		if !isTimeout(err) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want a timeout of the attempt (not of the context)", err)
		}
	})
	t.Run("the context's earlier deadline", func(t *testing.T) {
		tr := newH1Transport(p.url(), time.Hour)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if _, err := get(ctx, t, tr, p.url()); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
	})
}

func TestH1ClosesAnUnreadBodyWithoutDrainingIt(t *testing.T) {
	closed := make(chan struct{})
	p := newRawPMS(t, func(c net.Conn, br *bufio.Reader, _ int64, _ <-chan struct{}) {
		if !readRequest(br) {
			return
		}
		// An answer far larger than any bound, then nothing: only the
		// client closing the connection ends this.
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n"+strings.Repeat("x", 1024))
		io.Copy(io.Discard, c)
		close(closed)
	})
	tr := newH1Transport(p.url(), time.Hour)
	req, _ := http.NewRequest(http.MethodGet, p.url().String()+"/x", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // would read a terabyte if it drained
	<-closed
}

func TestH1SkipsInformationalAnswers(t *testing.T) {
	p := newRawPMS(t, func(c net.Conn, br *bufio.Reader, _ int64, _ <-chan struct{}) {
		for readRequest(br) {
			io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"+okAnswer)
		}
	})
	tr := newH1Transport(p.url(), time.Minute)
	defer tr.CloseIdleConnections()
	if body, err := get(context.Background(), t, tr, p.url()); err != nil || string(body) != "{}" {
		t.Fatalf("got %q, %v", body, err)
	}
}

func TestH1CloseIdleConnections(t *testing.T) {
	closed := make(chan struct{})
	p := newRawPMS(t, func(c net.Conn, br *bufio.Reader, _ int64, _ <-chan struct{}) {
		for readRequest(br) {
			io.WriteString(c, okAnswer)
		}
		close(closed) // the client closed its end
	})
	tr := newH1Transport(p.url(), time.Minute)
	if _, err := get(context.Background(), t, tr, p.url()); err != nil {
		t.Fatal(err)
	}
	tr.CloseIdleConnections()
	<-closed
}

func TestH1SendsOnlyGETsToItsHost(t *testing.T) {
	tr := newH1Transport(&url.URL{Scheme: "http", Host: "127.0.0.1:9"}, time.Minute)
	for _, r := range []*http.Request{
		httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9/x", strings.NewReader("{}")),
		httptest.NewRequest(http.MethodGet, "http://127.0.0.2:9/x", nil),
		httptest.NewRequest(http.MethodGet, "https://127.0.0.1:9/x", nil),
	} {
		r.RequestURI = ""
		if _, err := tr.RoundTrip(r); !errors.Is(err, errH1Request) {
			t.Errorf("%s %s: err = %v, want errH1Request", r.Method, r.URL, err)
		}
	}
}

func TestH1WritesTheRequestHead(t *testing.T) {
	got := make(chan *http.Request, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	tr := newH1Transport(u, time.Minute)
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/internal/v2/brands/a%2Fb/hotels?limit=2&cursor=x%20y", nil)
	req.Header["X-Request-Id"] = []string{"req-1"}
	req.Header["Traceparent"] = []string{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	req.Header["Accept"] = []string{"application/json", "text/plain"}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := <-got
	if r.RequestURI != "/internal/v2/brands/a%2Fb/hotels?limit=2&cursor=x%20y" || r.Host != u.Host || r.Method != http.MethodGet {
		t.Errorf("got %s %s Host %s", r.Method, r.RequestURI, r.Host)
	}
	for k, want := range req.Header {
		if g := r.Header.Values(k); strings.Join(g, ",") != strings.Join(want, ",") {
			t.Errorf("%s = %q, want %q", k, g, want)
		}
	}

	// A value that would split the head is refused before anything is sent.
	bad, _ := http.NewRequest(http.MethodGet, srv.URL+"/x", nil)
	bad.Header["X-Request-Id"] = []string{"a\r\nX-Injected: 1"}
	if _, err := tr.RoundTrip(bad); err == nil || !strings.Contains(err.Error(), "X-Request-Id") {
		t.Fatalf("err = %v, want the header refused", err)
	}
	after, _ := http.NewRequest(http.MethodGet, srv.URL+"/after", nil)
	if resp, err := tr.RoundTrip(after); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	if r := <-got; r.RequestURI != "/after" {
		t.Fatalf("the PMS got %s with %v: the refused request was sent", r.RequestURI, r.Header)
	}
}

// answerOf is what one transport made of an answer: its status, headers and
// body, or that it failed (at the head or in the body).
type answerOf struct {
	failed bool
	status int
	header http.Header
	body   string
}

func readAnswer(rt http.RoundTripper, u *url.URL) answerOf {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u.String()+"/internal/v2/brands/aurora/hotels/x", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return answerOf{failed: true}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return answerOf{failed: true}
	}
	resp.Header.Del("Date")
	return answerOf{status: resp.StatusCode, header: resp.Header, body: string(body)}
}

// FuzzH1ReadsAnswersAsNetHTTP answers the same bytes to h1Transport and to
// net/http's Transport (compression off: h1Transport asks for none) from
// a PMS on loopback that closes each connection after its answer: both
// fail, or both read the same status, headers and body. A 101 is the one
// answer they read differently on purpose (h1Transport refuses it).
func FuzzH1ReadsAnswersAsNetHTTP(f *testing.F) {
	for _, seed := range []string{
		okAnswer,
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
		"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 3\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + okAnswer,
		"HTTP/1.0 200 OK\r\n\r\n{\"hotel_id\":1}",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\n\r\n{}",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n",
		"HTP/1.1 200 OK\r\n\r\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	var answer atomic.Pointer[[]byte]
	p := newRawPMS(f, func(c net.Conn, br *bufio.Reader, _ int64, _ <-chan struct{}) {
		if readRequest(br) {
			c.Write(*answer.Load())
		}
	})
	u := p.url()
	f.Fuzz(func(t *testing.T, raw []byte) {
		answer.Store(&raw)
		h1 := newH1Transport(u, 10*time.Second)
		defer h1.CloseIdleConnections()
		std := NewTransport()
		std.DisableCompression = true
		defer std.CloseIdleConnections()
		got, want := readAnswer(h1, u), readAnswer(std, u)
		if want.status == http.StatusSwitchingProtocols {
			if !got.failed {
				t.Fatalf("h1Transport read a 101: %+v", got)
			}
			return
		}
		if got.failed != want.failed || got.status != want.status || got.body != want.body ||
			fmt.Sprint(got.header) != fmt.Sprint(want.header) {
			t.Fatalf("answer %q:\nh1Transport %+v\nnet/http    %+v", raw, got, want)
		}
	})
}

func TestH1DoesNotPoolAConnectionWithBytesPastTheAnswer(t *testing.T) {
	p := newRawPMS(t, func(c net.Conn, br *bufio.Reader, _ int64, _ <-chan struct{}) {
		for readRequest(br) {
			io.WriteString(c, okAnswer+"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nforged!")
		}
	})
	tr := newH1Transport(p.url(), time.Minute)
	defer tr.CloseIdleConnections()
	for i := range 2 {
		if body, err := get(context.Background(), t, tr, p.url()); err != nil || string(body) != "{}" {
			t.Fatalf("get %d: %q, %v (the bytes past an answer were read as the next one)", i, body, err)
		}
	}
	if n := p.conns.Load(); n != 2 {
		t.Fatalf("connections = %d, want 2: one per answer", n)
	}
}

func TestH1ClosesStaleIdleConnections(t *testing.T) {
	var opened, closed atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			opened.Add(1)
		case http.StateClosed:
			closed.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	tr := newH1Transport(u, time.Minute)
	defer tr.CloseIdleConnections()
	tr.idleTimeout = -1 // every pooled connection is stale when a call looks
	for i := range 2 {
		if _, err := get(context.Background(), t, tr, u); err != nil {
			t.Fatalf("get %d: %v", i, err)
		}
	}
	if n := opened.Load(); n != 2 {
		t.Fatalf("connections = %d, want 2: the stale one is not reused", n)
	}
	testkit.Eventually(t, "the stale connection closed", func() bool { return closed.Load() >= 1 })
}

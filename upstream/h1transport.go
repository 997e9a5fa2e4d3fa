package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// h1Transport is the transport of a PMS reached over plain http (the
// Client's default then; NewTransport's *http.Transport serves https): it
// sends each attempt over HTTP/1.1 on the calling goroutine, on a pooled
// keep-alive connection, and reads the answer there too. net/http's
// Transport hands each request to two goroutines of its connection (one
// writes, one reads) and back through channels and selects; on a miss that
// hand-off cost about as much CPU as decoding and mapping the record
// (bench/README.md, "The PMS path, third round"). The answer is read by net/http's own
// http.ReadResponse, as net/http's Transport reads it; the request head is
// written by writeHead, with Request.Write's checks of each header.
//
// Why not a library: valyala/fasthttp's client is synchronous too, but its
// connection cleaner sleeps up to the idle timeout and cannot be stopped,
// and its default dialer starts a goroutine that never ends; this
// repository starts no goroutine without a way to stop it.
//
// Each attempt is bounded as a whole, the body included, by the earlier of
// attempt (ClientConfig.AttemptTimeout) and the request context's deadline,
// set as the connection's deadline: no timer or context per attempt. A
// context cancelled mid-attempt ends the attempt at once
// (context.AfterFunc moves the deadline into the past).
//
// A connection goes back to the pool only when its answer's body was read
// to its end and closed, and the PMS did not ask to close it; up to maxIdle
// connections wait there. A pooled connection idle longer than idleTimeout
// is closed when a call finds it, or by CloseIdleConnections: no goroutine
// watches the pool. A request that fails on a reused connection before any
// byte of its answer arrived (the PMS closed an idle connection) is sent
// once more on a new one, as net/http's Transport does for a GET: it is
// not an attempt of its own.
type h1Transport struct {
	host        string // the URL's host (and port) this transport serves
	addr        string // host:port to dial
	attempt     time.Duration
	idleTimeout time.Duration
	maxIdle     int
	dialer      net.Dialer

	mu   sync.Mutex
	idle []*h1Conn // last in, first out: the warmest connection first
}

// newH1Transport returns the transport of the PMS at u (scheme http), each
// attempt bounded by attempt (0: by the request's context only). Its
// pooling and dialling match NewTransport's: 128 idle connections, 90 s
// idle timeout, dial timeout 2 s with 30 s keep-alive.
func newH1Transport(u *url.URL, attempt time.Duration) *h1Transport {
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &h1Transport{
		host: u.Host, addr: addr, attempt: attempt,
		idleTimeout: 90 * time.Second, maxIdle: 128,
		dialer: net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second},
	}
}

// h1Conn is one connection with its buffers.
type h1Conn struct {
	nc    net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	read  int64     // bytes read from nc so far (counted by br's source)
	since time.Time // when it went idle
	// expire is expireNow, bound once: the cancellation hook of each
	// attempt on this connection, without a closure per attempt.
	expire func()
}

// expireNow ends the connection's reads and writes under way at once.
func (c *h1Conn) expireNow() { _ = c.nc.SetDeadline(longAgo) }

// Read counts what the connection received: the pool's test for "nothing
// of the answer arrived".
func (c *h1Conn) Read(p []byte) (int, error) {
	n, err := c.nc.Read(p)
	c.read += int64(n)
	return n, err
}

// errH1Request: a request this transport does not send.
var errH1Request = errors.New("upstream: the PMS transport sends GETs without a body to its own host only")

// longAgo is a deadline already passed: it ends any read or write at once.
var longAgo = time.Unix(1, 0)

func (t *h1Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		req.Body.Close()
		return nil, errH1Request
	}
	if req.URL.Scheme != "http" || req.URL.Host != t.host || req.Method != http.MethodGet {
		return nil, errH1Request
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	if t.attempt > 0 {
		if d := time.Now().Add(t.attempt); deadline.IsZero() || d.Before(deadline) {
			deadline = d
		}
	}
	for retried := false; ; retried = true {
		pc, reused, err := t.get(ctx, deadline)
		if err != nil {
			return nil, ctxErr(ctx, err)
		}
		resp, partial, err := t.exchange(ctx, pc, req, deadline)
		if err == nil {
			return resp, nil
		}
		var ne net.Error
		if reused && !retried && !partial && ctx.Err() == nil && time.Now().Before(deadline) &&
			(!errors.As(err, &ne) || !ne.Timeout()) {
			continue // the PMS closed an idle connection: send it again, on a new one
		}
		return nil, ctxErr(ctx, err)
	}
}

// ctxErr is err, or the context's own error when the context ended the
// attempt (its deadline or cancellation moved the connection's deadline).
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return err
}

// get takes the warmest pooled connection still fresh, or dials one. The
// pool is last in, first out: when the warmest is stale, all are.
func (t *h1Transport) get(ctx context.Context, deadline time.Time) (pc *h1Conn, reused bool, err error) {
	t.mu.Lock()
	if n := len(t.idle); n > 0 {
		if pc = t.idle[n-1]; time.Since(pc.since) <= t.idleTimeout {
			t.idle[n-1] = nil
			t.idle = t.idle[:n-1]
			t.mu.Unlock()
			return pc, true, nil
		}
		stale := t.idle
		t.idle = nil
		t.mu.Unlock()
		for _, c := range stale {
			c.nc.Close()
		}
	} else {
		t.mu.Unlock()
	}
	d := t.dialer
	if !deadline.IsZero() {
		d.Deadline = deadline
	}
	nc, err := d.DialContext(ctx, "tcp", t.addr)
	if err != nil {
		return nil, false, err
	}
	pc = &h1Conn{nc: nc}
	pc.expire = pc.expireNow
	pc.br = bufio.NewReader(pc)
	pc.bw = bufio.NewWriter(nc)
	return pc, false, nil
}

// put returns a connection whose answer was read whole to the pool.
func (t *h1Transport) put(pc *h1Conn) {
	pc.since = time.Now()
	t.mu.Lock()
	if len(t.idle) < t.maxIdle {
		t.idle = append(t.idle, pc)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	pc.nc.Close()
}

// CloseIdleConnections closes every pooled connection.
func (t *h1Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, pc := range idle {
		pc.nc.Close()
	}
}

// exchange sends req on pc and reads the answer's head. On failure pc is
// closed, and partial says part of an answer had arrived (so the request
// is not sent again).
func (t *h1Transport) exchange(ctx context.Context, pc *h1Conn, req *http.Request, deadline time.Time) (resp *http.Response, partial bool, err error) {
	if err := pc.nc.SetDeadline(deadline); err != nil {
		pc.nc.Close()
		return nil, false, err
	}
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, pc.expire)
	}
	fail := func(err error, partial bool) (*http.Response, bool, error) {
		if stop != nil {
			stop()
		}
		pc.nc.Close()
		return nil, partial, err
	}
	read := pc.read
	if err := writeHead(pc.bw, req); err != nil {
		return fail(err, false)
	}
	if err := pc.bw.Flush(); err != nil {
		return fail(err, false)
	}
	resp, err = http.ReadResponse(pc.br, req)
	// Informational answers (103 Early Hints) come before the answer
	// itself; net/http's Transport skips up to 5 as well.
	for i := 0; err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols; i++ {
		if i == 5 {
			return fail(errors.New("upstream: too many informational answers"), true)
		}
		resp, err = http.ReadResponse(pc.br, req)
	}
	if err != nil {
		return fail(err, pc.read != read)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return fail(errors.New("upstream: the PMS switched protocols"), true)
	}
	resp.Body = &h1Body{rc: resp.Body, t: t, pc: pc, stop: stop,
		eof: resp.Body == http.NoBody, keep: !resp.Close && !req.Close}
	return resp, false, nil
}

// writeHead writes the head of a GET without a body: the request line,
// Host and req's headers, each checked as http.Request.Write checks them
// (a name or value that could split the head is refused, and nothing is
// sent). It writes what Request.Write would, but in the headers' map
// order and without its per-request allocations (a quarter of a PMS
// call's transport CPU).
func writeHead(w *bufio.Writer, req *http.Request) error {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !httpguts.ValidHostHeader(host) {
		return errors.New("upstream: invalid Host")
	}
	for k, vs := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return errors.New("upstream: invalid header name " + strconv.Quote(k))
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return errors.New("upstream: invalid value of header " + k)
			}
		}
	}
	w.WriteString("GET ")
	w.WriteString(req.URL.EscapedPath())
	if req.URL.RawQuery != "" {
		w.WriteByte('?')
		w.WriteString(req.URL.RawQuery)
	}
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	for k, vs := range req.Header {
		if k == "Host" {
			continue
		}
		for _, v := range vs {
			w.WriteString(k)
			w.WriteString(": ")
			w.WriteString(strings.TrimSpace(v))
			w.WriteString("\r\n")
		}
	}
	_, err := w.WriteString("\r\n")
	return err
}

// h1Body is an answer's body: its connection goes back to the pool when it
// was read to its end and closed, and is closed otherwise.
type h1Body struct {
	rc     io.ReadCloser
	t      *h1Transport
	pc     *h1Conn
	stop   func() bool // nil: the context cannot be cancelled
	eof    bool        // read to its end
	keep   bool        // the connection may serve another request
	closed bool
}

func (b *h1Body) Read(p []byte) (int, error) {
	if b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	n, err := b.rc.Read(p)
	switch {
	case err == io.EOF:
		b.eof = true
	case err != nil:
		b.keep = false
	}
	return n, err
}

// Close returns the connection to the pool or closes it. A body not read
// to its end is not drained (net/http's body would read all of it: a PMS
// answering endlessly would hold the call until its deadline); its
// connection is closed instead.
func (b *h1Body) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	// The cancellation hook is off before the connection can serve
	// another request; if it ran already, the deadline it set stays
	// with the connection, which is closed.
	if b.stop != nil && !b.stop() {
		b.keep = false
	}
	// Bytes past the answer's end (a PMS that sent more than it said)
	// would be read as the next answer's head: such a connection is not
	// pooled.
	if b.eof && b.keep && b.pc.br.Buffered() == 0 {
		_ = b.rc.Close() // at its end: nothing left to read
		b.t.put(b.pc)
		return nil
	}
	return b.pc.nc.Close()
}

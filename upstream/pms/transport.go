package pms

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"time"
)

// NewTransport returns the *http.Transport a Client uses when
// ClientConfig.Transport is nil, for an http and an https PMS alike. It is
// net/http's Transport, whose connection handling is what makes a PMS's
// routine behaviour harmless (docs/contract.md section 19): a connection
// the PMS closes while idle is dropped as soon as its close arrives; a GET
// that fails on a reused connection before any byte of its answer arrived
// is sent again on another connection; bytes that arrive on an idle
// connection (a stray 408, a late extra answer) close it and are never read
// as an answer. The settings, and why: docs/resilience.md, "Client", item
// 4 (MaxResponseHeaderBytes, a 1 s IdleConnTimeout, 64 idle and 256
// connections per host, the dial and TLS timeouts, no proxy: the PMS is
// internal). No compression: an internal network, and the walk's bytes are
// bounded as sent (EDGE_PMS_MAX_WALK_BYTES). No ResponseHeaderTimeout: every attempt is bounded as a whole,
// body included, by ClientConfig.AttemptTimeout.
func NewTransport() *http.Transport {
	d := &net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    64,
		MaxConnsPerHost:        256,
		IdleConnTimeout:        time.Second,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
		TLSHandshakeTimeout:    5 * time.Second,
		ExpectContinueTimeout:  time.Second,
		DisableCompression:     true,
	}
}

// MaxResponseHeaderBytes bounds the head of every PMS answer NewTransport
// reads (docs/contract.md section 19: at most 1 MiB).
const MaxResponseHeaderBytes = 1 << 20

// boundary is the edge's side of the PMS connection: every attempt of a
// Client passes through it, just above net/http's Transport and below
// WrapTransport's wrapper (a tracing transport), so that what it hands up
// is the edge's own (failure.go):
//
//   - an attempt is bounded by AttemptTimeout, reading the body included,
//     the way http.Client.Timeout bounds one on a bare *http.Transport: a
//     deadline on the attempt's context, released by the retry decision
//     once the body has been read or drained (exchange.release).
//     http.Client.Timeout itself is not used: on a RoundTripper net/http
//     does not know (WrapTransport's) it costs a goroutine, a timer and a
//     channel per attempt;
//   - it learns the attempt's connection (httptrace's GotConn: which one,
//     and whether it carried an answer before), for the confirmation of
//     answers that came on a reused connection (confirm.go), and tells the
//     idle guard when net/http puts it back in its pool (connIdle);
//   - an exchange that must use a new connection (exchange.fresh: after a
//     408, or a confirmation) is sent through fresh, a copy of the
//     transport that keeps no connection alive;
//   - net/http's errors, of RoundTrip and of reading the body, become
//     classes (classifyTransport): nothing above sees the PMS's bytes
//     net/http quotes.
//
// It has no CloseIdleConnections: go-retryablehttp closes its client's
// idle connections after every failed call, which would drop the whole
// pool on each 404 or cancelled call; Client.CloseIdleConnections reaches
// the pool itself.
type boundary struct {
	pool    http.RoundTripper // ClientConfig.Transport
	fresh   http.RoundTripper // pool without keep-alive; nil: pool (a Transport that is not an *http.Transport)
	timeout time.Duration     // AttemptTimeout
	now     func() time.Time
	guarded bool // pool's connections are the idle guard's
}

// newBoundary is the boundary over cfg.Transport; onStray counts the idle
// guard's refusals.
func newBoundary(cfg ClientConfig, scheme string, onStray func()) *boundary {
	b := &boundary{pool: cfg.Transport, timeout: cfg.AttemptTimeout, now: cfg.Now}
	t, ok := cfg.Transport.(*http.Transport)
	if !ok {
		return b
	}
	if cfg.guardable && scheme == "http" {
		guardIdle(t, onStray)
		b.guarded = true
	}
	fresh := t.Clone()
	fresh.DisableKeepAlives = true
	b.fresh = fresh
	return b
}

func (b *boundary) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	x := exchangeOf(ctx)
	if x == nil { // not a Client's request (every request of Client.http is do's)
		resp, err := b.pool.RoundTrip(req)
		if err != nil {
			return nil, classifyTransport(err)
		}
		return resp, nil
	}
	x.started, x.conn, x.reused, x.proto = b.now(), nil, false, 0
	send := b.pool
	if x.fresh && b.fresh != nil {
		send = b.fresh
	}
	actx := b.trace(ctx, x)
	cancel := context.CancelFunc(nil)
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > b.timeout { // else the call's deadline comes first
		actx, cancel = context.WithTimeout(actx, b.timeout)
	}
	resp, err := send.RoundTrip(req.WithContext(actx))
	if err != nil {
		if cancel != nil {
			cancel()
		}
		return nil, classifyTransport(err)
	}
	x.release, x.proto = cancel, resp.ProtoMajor
	x.rbody = boundaryBody{rc: resp.Body}
	resp.Body = &x.rbody
	return resp, nil
}

// trace returns ctx with the attempt's httptrace hooks: GotConn records
// the connection in x (on the caller's goroutine); PutIdleConn, on
// net/http's reading goroutine, tells the idle guard, through a conn kept
// per attempt (x may be another request's by then).
func (b *boundary) trace(ctx context.Context, x *exchange) context.Context {
	t := &attemptConn{x: x}
	ct := &httptrace.ClientTrace{GotConn: t.got}
	if b.guarded {
		ct.PutIdleConn = t.idle
	}
	return httptrace.WithClientTrace(ctx, ct)
}

// attemptConn is the connection of one attempt.
type attemptConn struct {
	x    *exchange
	conn net.Conn
}

func (a *attemptConn) got(info httptrace.GotConnInfo) {
	a.conn = info.Conn
	a.x.conn, a.x.reused = info.Conn, info.Reused
}

func (a *attemptConn) idle(err error) {
	if err == nil && a.conn != nil {
		connIdle(a.conn)
	}
}

// boundaryBody is an answer's body as the boundary hands it up: a failure
// to read it (a reset, a deadline, a chunk or trailer net/http cannot
// read) is a classified *transportError.
type boundaryBody struct{ rc io.ReadCloser }

func (b *boundaryBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		err = classifyTransport(err)
	}
	return n, err
}

func (b *boundaryBody) Close() error { return b.rc.Close() }

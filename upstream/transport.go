package upstream

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"syscall"
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

// roundTripOnly hides every method of a RoundTripper but RoundTrip.
// go-retryablehttp calls HTTPClient.CloseIdleConnections after every failed
// call, which would drop the whole shared pool on each 404 or cancelled
// call; through this wrapper that call does nothing.
// Client.CloseIdleConnections closes idle connections on purpose.
//
// It also bounds each attempt by timeout (ClientConfig.AttemptTimeout),
// reading the body included, the way http.Client.Timeout bounds one on a
// bare *http.Transport: a deadline on the request's context, released by
// the request's attempts (every request of Client.http is one of do's)
// when the next attempt starts or the request ends, after the body was
// read or drained. http.Client.Timeout itself is not used: on any
// RoundTripper net/http does not know (this one, WrapTransport's) it
// costs a goroutine, a timer and a channel per attempt.
type roundTripOnly struct {
	rt      http.RoundTripper
	timeout time.Duration
	// guarded: rt's connections are guardedConns (guardIdle), told when
	// they go idle through each request's trace (withIdleTrace).
	guarded bool
}

func (r roundTripOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	sctx := ctx // the context the attempt is sent with
	if r.guarded {
		sctx = withIdleTrace(ctx)
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= r.timeout {
		if r.guarded {
			req = req.WithContext(sctx)
		}
		return r.rt.RoundTrip(req) // the call's deadline comes first
	}
	actx, cancel := context.WithTimeout(sctx, r.timeout)
	resp, err := r.rt.RoundTrip(req.WithContext(actx))
	if err != nil {
		cancel()
		return nil, err
	}
	// On the caller's goroutine: retryablehttp's Do.
	ctx.Value(attemptKey{}).(*attempts).release = cancel
	return resp, nil
}

// errStrayBytes fails the first write of a request on a reused connection
// that holds bytes nobody asked for.
var errStrayBytes = errors.New("upstream: bytes or a close arrived on an idle PMS connection")

// guardIdle wraps dial so that a plain-HTTP/1.1 connection is never reused
// when the PMS wrote to it (a stray 408, a late extra answer) or closed it
// while it was idle (docs/contract.md section 19).
//
// net/http's Transport already closes such a connection when it notices
// the bytes, but it notices them on a goroutine of its own: on a busy
// machine a request may be written on the connection first, and the
// stray bytes are then read as that request's answer (seen in
// cmd/edge's TestPMSForgedTrailingAnswerIsNeverServed). So the guard
// watches each connection from the moment net/http puts it back in its
// pool (withIdleTrace): before the first write of the next request, if
// net/http's reader took bytes off it meanwhile, or the kernel holds some
// (asked without reading or waiting), the write fails having written
// nothing, and net/http sends the request
// again on another connection (its retry of a GET that failed on a reused
// connection before any byte was written), which is neither an attempt
// of the retry policy nor a failure of the breaker.
//
// Only for http: on an https connection, bytes while idle are normal
// (HTTP/2 frames, TLS records).
func guardIdle(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		sc, ok := c.(syscall.Conn)
		if !ok {
			return c, nil
		}
		raw, err := sc.SyscallConn()
		if err != nil {
			return c, nil
		}
		return &guardedConn{Conn: c, raw: raw}, nil
	}
}

// guardedConn is a PMS connection that refuses to carry a request after
// bytes arrived while it was idle.
type guardedConn struct {
	net.Conn
	raw syscall.RawConn
	// answered: a read returned data since the last write, so the next
	// write starts a new request on a connection that has carried one.
	answered atomic.Bool
	// idle: net/http put the connection back in its pool (withIdleTrace) and
	// no request was written since; stray: a read returned data then.
	idle, stray atomic.Bool
}

func (c *guardedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.answered.Store(true)
		if c.idle.Load() {
			c.stray.Store(true)
		}
	}
	return n, err
}

func (c *guardedConn) Write(p []byte) (int, error) {
	c.idle.Store(false)
	// Either net/http's reader already took stray bytes off the socket
	// (stray), or they still wait there (pending).
	if c.answered.Swap(false) && (c.stray.Load() || pending(c.raw)) {
		_ = c.Conn.Close()
		return 0, errStrayBytes
	}
	return c.Conn.Write(p)
}

// withIdleTrace returns ctx with an httptrace.ClientTrace that tells the
// guardedConn an attempt got when net/http puts it back in its pool. The
// PutIdleConn hook runs on net/http's reading goroutine before it reads
// again: from then on, any byte read is a byte nobody asked for.
func withIdleTrace(ctx context.Context) context.Context {
	var conn *guardedConn
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { conn, _ = info.Conn.(*guardedConn) },
		PutIdleConn: func(err error) {
			if err == nil && conn != nil {
				conn.idle.Store(true)
			}
		},
	})
}

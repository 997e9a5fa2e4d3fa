package pms

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
)

// The idle guard (docs/contract.md section 19; docs/resilience.md,
// "Client", item 4): a plain-HTTP/1.1 PMS connection is never reused when
// the PMS wrote to it (a stray 408, a late extra answer) or closed it while
// it was idle.
//
// net/http's Transport already closes such a connection when it notices
// the bytes, but it notices them on a goroutine of its own: on a busy
// machine a request may be written on the connection first, and the stray
// bytes are then read as that request's answer. So the guard watches each
// connection from the moment net/http puts it back in its pool (connIdle):
// before the first write of the next request, if net/http's reader took
// bytes off it meanwhile, or the kernel holds some (peek: asked without
// reading or waiting), the write fails having written nothing, and
// net/http sends the request again on another connection (its retry of a
// GET that failed on a reused connection before any byte was written),
// which is neither an attempt of the retry policy nor a failure of the
// breaker.
//
// The seam is two functions: guardIdle, which makes a transport's
// connections guarded ones, and connIdle, which the boundary's trace of
// each attempt calls when net/http puts the attempt's connection back in
// its pool (transport.go). Only for http: on an https connection, bytes
// while idle are normal (HTTP/2 frames, TLS records).
//
// What it cannot see: a stray answer that arrives after the next request
// was written. That is confirm.go's part.

// errStrayBytes fails the first write of a request on a reused connection
// that holds bytes nobody asked for, or that the PMS closed.
var errStrayBytes = errors.New("upstream: bytes or a close arrived on an idle PMS connection")

// guardIdle makes the connections t dials guarded ones. onStray, when set,
// is called once for each connection on which bytes arrived while it was
// idle (the refusals counted as RefusedIdleBytes); a close is not counted.
func guardIdle(t *http.Transport, onStray func()) {
	dial := t.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
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
		return &guardedConn{Conn: c, raw: raw, onStray: onStray}, nil
	}
}

// connIdle tells c's guard, when it has one, that net/http put c back in
// its pool: from now on any byte read on it is a byte nobody asked for.
// It is called on net/http's reading goroutine before it reads again.
func connIdle(c net.Conn) {
	if g, ok := c.(*guardedConn); ok {
		g.idle.Store(true)
	}
}

// guardedConn is a PMS connection that refuses to carry a request after
// bytes arrived while it was idle.
type guardedConn struct {
	net.Conn
	raw     syscall.RawConn
	onStray func() // nil: not counted
	// answered: a read returned data since the last write, so the next
	// write starts a new request on a connection that has carried one.
	answered atomic.Bool
	// idle: net/http put the connection back in its pool (connIdle) and
	// no request was written since; stray: a read returned data then.
	idle, stray atomic.Bool
	counted     atomic.Bool // onStray was called
}

func (c *guardedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.answered.Store(true)
		if c.idle.Load() {
			c.stray.Store(true)
			c.found()
		}
	}
	return n, err
}

func (c *guardedConn) Write(p []byte) (int, error) {
	c.idle.Store(false)
	if !c.answered.Swap(false) {
		return c.Conn.Write(p) // a new connection, or a request still being written
	}
	// Either net/http's reader already took stray bytes off the socket
	// (stray), or they still wait there, or the PMS closed it.
	data, closed := peek(c.raw)
	if c.stray.Load() || data || closed {
		if data {
			c.found()
		}
		_ = c.Conn.Close()
		return 0, errStrayBytes
	}
	return c.Conn.Write(p)
}

// found counts the connection's stray bytes, once.
func (c *guardedConn) found() {
	if c.onStray != nil && c.counted.CompareAndSwap(false, true) {
		c.onStray()
	}
}

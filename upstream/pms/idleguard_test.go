package pms

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// guardedPair is a guarded client connection and its server end, on
// loopback.
func guardedPair(t *testing.T, onStray func()) (*guardedConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tr := &http.Transport{}
	guardIdle(tr, onStray)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := tr.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); srv.Close() })
	g, ok := c.(*guardedConn)
	if !ok {
		t.Fatalf("dialed %T, want a *guardedConn", c)
	}
	return g, srv
}

// exchangeOn writes a request on g and reads the server's answer, as
// net/http would: the connection has then carried an answer.
func exchangeOn(t *testing.T, g *guardedConn, srv net.Conn) {
	t.Helper()
	if _, err := g.Write([]byte("GET / HTTP/1.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(srv, make([]byte, len("GET / HTTP/1.1\r\n\r\n"))); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Write([]byte("answer")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(g, make([]byte, len("answer"))); err != nil {
		t.Fatal(err)
	}
}

// waitPending polls until the kernel holds bytes (or a close) for g: the
// server's write has arrived.
func waitPending(t *testing.T, g *guardedConn) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if data, closed := peek(g.raw); data || closed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the server's bytes never arrived")
		}
		time.Sleep(time.Millisecond) // polling for the bytes to arrive
	}
}

// Bytes that arrive while a connection is idle (net/http put it back in
// its pool) refuse the next request's write: nothing is written, the
// connection is closed, the stray is counted once.
func TestIdleGuardRefusesAConnectionThatGotBytesWhileIdle(t *testing.T) {
	var strays atomic.Int32
	g, srv := guardedPair(t, func() { strays.Add(1) })
	exchangeOn(t, g, srv)
	connIdle(g)
	if _, err := srv.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged")); err != nil {
		t.Fatal(err)
	}
	waitPending(t, g)
	if n, err := g.Write([]byte("GET /next HTTP/1.1\r\n\r\n")); n != 0 || !errors.Is(err, errStrayBytes) {
		t.Fatalf("write on a connection with stray bytes: %d, %v; want 0, errStrayBytes", n, err)
	}
	if got, _ := io.ReadAll(srv); len(got) != 0 {
		t.Errorf("the server got %q after the stray; want nothing, and the connection closed", got)
	}
	if n := strays.Load(); n != 1 {
		t.Errorf("strays counted %d, want 1", n)
	}
}

// Stray bytes that net/http's reader already took off the connection while
// it was idle refuse it just the same, and are counted once.
func TestIdleGuardRefusesBytesReadWhileIdle(t *testing.T) {
	var strays atomic.Int32
	g, srv := guardedPair(t, func() { strays.Add(1) })
	exchangeOn(t, g, srv)
	connIdle(g)
	if _, err := srv.Write([]byte("stray")); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(g).Peek(1); err != nil { // net/http's reader, peeking while idle
		t.Fatal(err)
	}
	if _, err := g.Write([]byte("GET /next HTTP/1.1\r\n\r\n")); !errors.Is(err, errStrayBytes) {
		t.Fatalf("write after stray bytes were read: %v; want errStrayBytes", err)
	}
	if n := strays.Load(); n != 1 {
		t.Errorf("strays counted %d, want 1", n)
	}
}

// A connection the server closed while idle is refused too (the request
// goes on another connection), but a close is not a stray answer.
func TestIdleGuardRefusesAClosedConnectionUncounted(t *testing.T) {
	var strays atomic.Int32
	g, srv := guardedPair(t, func() { strays.Add(1) })
	exchangeOn(t, g, srv)
	connIdle(g)
	srv.Close()
	waitPending(t, g)
	if _, err := g.Write([]byte("GET /next HTTP/1.1\r\n\r\n")); !errors.Is(err, errStrayBytes) {
		t.Fatalf("write on a connection the server closed: %v; want errStrayBytes", err)
	}
	if n := strays.Load(); n != 0 {
		t.Errorf("a close counted as %d strays, want 0", n)
	}
}

// An answer read while a request is under way (not idle) is no stray: the
// next request is written.
func TestIdleGuardLetsAnAnsweredConnectionCarryTheNext(t *testing.T) {
	var strays atomic.Int32
	g, srv := guardedPair(t, func() { strays.Add(1) })
	exchangeOn(t, g, srv)
	connIdle(g)
	go func() { _, _ = io.ReadFull(srv, make([]byte, len("GET /next HTTP/1.1\r\n\r\n"))) }()
	if _, err := g.Write([]byte("GET /next HTTP/1.1\r\n\r\n")); err != nil {
		t.Fatalf("write on a quiet idle connection: %v", err)
	}
	if n := strays.Load(); n != 0 {
		t.Errorf("strays counted %d, want 0", n)
	}
}

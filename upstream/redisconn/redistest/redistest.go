// Package redistest starts a Redis server for tests: a real redis-server on
// a free loopback port in a temporary directory. Where redis-server is not
// installed the test skips, or fails when CI is "true" (CI installs it), so
// that go test ./... passes on a machine with nothing but Go. miniredis
// stands in only where a test asks for it (Options.Mini): it cannot run the
// edge's Lua scripts as Redis does, so a test that passed on it proved
// nothing about them.
//
// The server is stopped when the test ends. Stop and Restart stop and start
// the same server on the same port, for fault tests.
package redistest

import (
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// DebianPackage is the package that provides redis-server.
const DebianPackage = "redis-server"

// Options choose the server.
type Options struct {
	// Mini: an in-process miniredis, wherever the test runs (for tests of
	// plain commands only: no Lua scripts, replication or memory limits).
	// False: the real redis-server (missing: the test skips, or fails
	// when CI=true).
	Mini bool
}

// Server is a running test Redis.
type Server struct {
	t    testing.TB
	addr string // 127.0.0.1:port, the same across restarts
	dir  string

	mu   sync.Mutex
	p    *proc // the real server, nil when stopped or mini
	mini *miniredis.Miniredis
}

// Start starts the real redis-server for t. Where it is not installed the
// test skips, or with CI=true fails, naming the Debian package.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith starts a server for t as opts say.
func StartWith(t testing.TB, opts Options) *Server {
	t.Helper()
	if !opts.Mini {
		requireReal(t)
	}
	s := &Server{t: t, dir: t.TempDir()}
	if opts.Mini {
		s.mini = miniredis.RunT(t) // on a free loopback port, closed when t ends
		s.addr = s.mini.Addr()
		return s
	}
	s.p = startProc(t, nil, func(port, _ string) []string { return serverArgs(port, s.dir) })
	s.addr = s.p.addr
	t.Cleanup(s.Stop)
	return s
}

// Addr is host:port of the server (127.0.0.1, same across restarts).
func (s *Server) Addr() string { return s.addr }

// URL is the redis:// address of database 0.
func (s *Server) URL() string { return "redis://" + s.addr + "/0" }

// Real reports whether this is a real redis-server (false: miniredis).
func (s *Server) Real() bool { return s.mini == nil }

// Stop stops the server (abruptly: SIGKILL) and waits until it has exited.
// Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mini != nil {
		s.mini.Close()
	} else if s.p != nil {
		s.p.kill()
		s.p = nil
	}
}

// Restart starts the stopped server again on the same port (empty: the
// test server keeps no data). It fails the test if it cannot.
func (s *Server) Restart() {
	s.t.Helper()
	if s.mini != nil {
		if err := s.mini.Restart(); err != nil {
			s.t.Fatalf("redistest: miniredis restart: %v", err)
		}
		return
	}
	var err error
	for range 50 { // the old socket may linger briefly
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.t.Fatalf("redistest: restart: %v", err)
}

// Flush deletes every key.
func (s *Server) Flush() {
	s.t.Helper()
	if s.mini != nil {
		s.mini.FlushAll()
	} else if _, err := Query(s.addr, nil, "FLUSHALL"); err != nil {
		s.t.Fatalf("redistest: FLUSHALL: %v", err)
	}
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p != nil {
		return errors.New("already running")
	}
	_, port, _ := net.SplitHostPort(s.addr)
	p, err := launch(s.addr, nil, serverArgs(port, s.dir))
	s.p = p
	return err
}

// serverArgs are the arguments of a plain server on port keeping its
// files in dir, then extra.
func serverArgs(port, dir string, extra ...string) []string {
	return append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir}, extra...)
}

package redistest

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
)

func TestStartStopRestart(t *testing.T) {
	for _, mini := range []bool{false, true} {
		t.Run(fmt.Sprintf("mini=%v", mini), func(t *testing.T) { startStopRestart(t, mini) })
	}
}

func startStopRestart(t *testing.T, mini bool) {
	s := StartWith(t, Options{Mini: mini})
	if s.Real() == mini {
		t.Fatalf("Mini=%v: Real()=%v", mini, s.Real())
	}
	if got, err := Query(s.Addr(), nil, "SET", "k", "v"); err != nil || got != "OK" {
		t.Fatalf("SET: %q, %v", got, err)
	}
	s.Flush()
	if got, err := Query(s.Addr(), nil, "GET", "k"); err != nil || got != "" {
		t.Fatalf("GET after flush: %q, %v", got, err)
	}
	s.Stop()
	if c, err := net.Dial("tcp", s.Addr()); err == nil {
		c.Close()
		t.Fatalf("Mini=%v: still listening on %s after Stop", mini, s.Addr())
	}
	addr := s.Addr()
	s.Restart()
	if s.Addr() != addr {
		t.Fatalf("address changed: %s -> %s", addr, s.Addr())
	}
	if got, err := Query(s.Addr(), nil, "PING"); err != nil || got != "PONG" {
		t.Fatalf("Mini=%v: PING after restart: %q, %v", mini, got, err)
	}
}

func TestURL(t *testing.T) {
	s := StartWith(t, Options{Mini: true})
	if want := "redis://" + s.Addr() + "/0"; s.URL() != want {
		t.Fatalf("URL %q, want %q", s.URL(), want)
	}
}

// recorder is a testing.TB that records Fatalf and Skipf.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Helper() {}

// run calls StartWith on a recorder in its own goroutine (Fatalf ends it).
func run(t *testing.T, opts Options) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		StartWith(r, opts)
	}()
	<-done
	return r
}

// Without redis-server a test fails under CI=true and skips otherwise,
// never running against miniredis unasked: miniredis cannot run the
// edge's Lua scripts (docs/contract.md section 22: a fresh clone with only
// Go passes go test ./...).
func TestMissingServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no redis-server here

	t.Setenv("CI", "true")
	r := run(t, Options{})
	if !strings.Contains(r.fatal, "redis-server") || !strings.Contains(r.fatal, "apt-get install -y redis-server") || r.skip != "" {
		t.Fatalf("CI=true: failure %q (skip %q); want a failure naming the Debian package", r.fatal, r.skip)
	}

	t.Setenv("CI", "")
	r = run(t, Options{})
	if r.fatal != "" || !strings.Contains(r.skip, "redis-server") {
		t.Fatalf("CI unset: failure %q, skip %q; want a skip naming redis-server", r.fatal, r.skip)
	}

	r = run(t, Options{Mini: true})
	if r.fatal != "" || r.skip != "" {
		t.Fatalf("Mini: failure %q, skip %q; want miniredis, which needs no program", r.fatal, r.skip)
	}
}

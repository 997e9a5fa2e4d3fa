package redistest

import (
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

func TestStartStopRestart(t *testing.T) {
	for _, mini := range []bool{false, true} {
		s := StartWith(t, Options{Mini: mini})
		_, noReal := exec.LookPath("redis-server")
		if s.Real() != (!mini && noReal == nil) {
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
}

func TestURL(t *testing.T) {
	s := StartWith(t, Options{Mini: true})
	if want := "redis://" + s.Addr() + "/0"; s.URL() != want {
		t.Fatalf("URL %q, want %q", s.URL(), want)
	}
}

// recorder is a testing.TB that records Fatalf and Logf.
type recorder struct {
	testing.TB
	fatal, log string
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Logf(format string, args ...any) { r.log = fmt.Sprintf(format, args...) }
func (r *recorder) Helper()                         {}

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

func TestMissingServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // no redis-server here

	r := run(t, Options{RequireReal: true})
	if !strings.Contains(r.fatal, "redis-server") || !strings.Contains(r.fatal, "apt-get install -y redis-server") {
		t.Fatalf("CI failure message %q does not name the Debian package", r.fatal)
	}

	r = run(t, Options{})
	if r.fatal != "" {
		t.Fatalf("fallback failed: %s", r.fatal)
	}
	if !strings.Contains(r.log, "miniredis") {
		t.Fatalf("fallback not logged: %q", r.log)
	}
}

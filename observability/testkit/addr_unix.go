//go:build unix

package testkit

import (
	"fmt"
	"syscall"
	"testing"
)

// RefusingAddr is a loopback address (host:port) where a connection is
// refused for the whole test, whatever else runs in parallel: a TCP socket
// bound to it and never listening holds the port, so no other test's
// server, in this process or another, can take it (as one can take a port
// listened on and closed, turning "nothing listens" into someone else's
// live server).
func RefusingAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}

//go:build linux || darwin || freebsd || netbsd || openbsd

package upstream

import "syscall"

// pending reports whether the socket has bytes to read or was closed by the
// peer, without reading or waiting. Control, unlike RawConn.Read, does not
// wait for the read lock that net/http's reading goroutine holds.
func pending(raw syscall.RawConn) bool {
	var found bool
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// n > 0: bytes; n == 0 without error: the peer closed.
		found = n > 0 || (n == 0 && err == nil)
	})
	return found
}

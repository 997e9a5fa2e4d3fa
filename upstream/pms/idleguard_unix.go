//go:build linux || darwin || freebsd || netbsd || openbsd

package pms

import "syscall"

// peek tells whether the socket has bytes to read (data) or was closed by
// the peer (closed), without reading or waiting: the idle guard's one
// system call (idleguard.go). Control, unlike RawConn.Read, does not wait
// for the read lock that net/http's reading goroutine holds.
func peek(raw syscall.RawConn) (data, closed bool) {
	n := -1 // one variable for the closure to share: one allocation
	_ = raw.Control(func(fd uintptr) {
		var b [1]byte
		var err error
		if n, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT); err != nil {
			n = -1
		}
	})
	return n > 0, n == 0 // n == 0 without error: the peer closed
}

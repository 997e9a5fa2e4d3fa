//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package pms

import "syscall"

// peek cannot look without reading here; the idle guard (idleguard.go)
// then relies on what net/http's reader took off the connection.
func peek(syscall.RawConn) (data, closed bool) { return false, false }

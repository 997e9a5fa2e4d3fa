//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package upstream

import "syscall"

// pending cannot look without reading here; net/http's own idle check is
// all there is.
func pending(syscall.RawConn) bool { return false }

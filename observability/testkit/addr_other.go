//go:build !unix

package testkit

import (
	"net"
	"testing"
)

// RefusingAddr is a loopback address where nothing listened a moment ago
// (the unix version holds the port for the whole test).
func RefusingAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

//go:build !unix

package main

import "testing"

// refusingAddr is a loopback address where nothing listened a moment ago
// (see the unix version, which holds it for the test).
func refusingAddr(t *testing.T) string { return freePort(t) }

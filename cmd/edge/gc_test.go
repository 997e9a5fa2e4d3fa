package main

import (
	"runtime/debug"
	"testing"
)

func TestTuneGC(t *testing.T) {
	was := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(was) })

	tuneGC(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(100); got != gcPercent {
		t.Errorf("GOGC unset: GC percent %d, want the edge's default %d", got, gcPercent)
	}
	// The runtime read GOGC itself; the edge leaves an operator's choice
	// alone, even one equal to Go's default.
	tuneGC(func(k string) (string, bool) { return "100", k == "GOGC" })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GOGC=100 set: GC percent %d, want 100 left alone", got)
	}
}

package main

import "runtime/debug"

// gcPercent is the collector's target when GOGC is not set: the heap may
// grow to five times what is live before a collection starts.
//
// Why not Go's 100: the edge's live heap is small (the cache snapshot and
// the connections' buffers, a few MB), and each request leaves a few KB of
// garbage. At 100 the collector then runs dozens of times a second under
// load, and its fixed cost per cycle (stacks, roots, the background
// workers' wake-ups, write barriers while it marks) became the largest
// single cost of a cached answer after the syscalls: bench/run measured a
// cached get at about 33 µs of CPU with 100 and about 26 µs with 400 (see
// bench/README.md). The price is memory: the heap's peak is about five
// times the live heap instead of two. Deployments bound it with GOMEMLIMIT
// (docs/deploy/edge.yaml sets 230MiB), near which the collector works
// harder whatever GOGC says; GOGC set in the environment (even to 100)
// wins over this default.
const gcPercent = 400

// tuneGC applies gcPercent unless the operator set GOGC, which the runtime
// has already read.
func tuneGC(getenv lookupEnv) {
	if _, set := getenv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
}

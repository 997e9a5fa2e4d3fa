// Package gcrule is the edge's garbage-collector pace: the heap may grow by
// max(live heap, 48 MiB) between collections, within Go's GOGC=100 and 800,
// unless the operator set GOGC (docs/operations.md, "Memory and the garbage
// collector"). It sits beside the program that sets it, cmd/edge: a choice
// of that process, not of the telemetry.
package gcrule

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// The collector's target when GOGC is not set: the heap may grow by
// gcHeadroom past what is live, or by as much as is live when that is
// more (Go's own GOGC=100), and by at most maxGCPercent. Why not Go's 100:
// docs/operations.md, "Memory and the garbage collector" (a cached get
// spent more on the collector's fixed cost per cycle than on anything but
// system calls). Why not a fixed 400, which it was first: a brand's 60 MB
// live heap then put bench/run's brand-scale RSS at 270 MiB; the headroom
// rule gives a large live heap Go's default trade (about 124 MiB there).
const (
	gcHeadroom   = 48 << 20
	maxGCPercent = 800
)

// gcPercentFor is the GC percentage that lets the heap grow by
// max(live, gcHeadroom) before the next collection, within 100 and
// maxGCPercent.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return maxGCPercent
	}
	return int(min(max(100*uint64(gcHeadroom)/live, 100), maxGCPercent))
}

// Tune applies gcPercentFor to the live heap now and again after every
// collection until ctx ends, unless the operator set GOGC (which the
// runtime has read itself, and which wins, 100 included). GOMEMLIMIT, when
// set, still caps the heap whatever the percentage: deployments set it
// (docs/deploy/edge.yaml).
//
// It runs no goroutine of its own: a cleanup on an unreachable object runs
// on the runtime's finalizer goroutine once a collection has found it, and
// re-arms itself with a new object each time.
//
// The tuner returned is nil when GOGC is set; its stopped channel closes
// once it has seen ctx end (tests).
func Tune(ctx context.Context, getenv func(string) (string, bool)) *Tuner {
	if _, set := getenv("GOGC"); set {
		return nil
	}
	t := &Tuner{ctx: ctx, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, stopped: make(chan struct{})}
	t.apply()
	t.arm()
	return t
}

// Tuner is the running headroom rule of Tune.
type Tuner struct {
	ctx     context.Context
	sample  []metrics.Sample // used by one cleanup at a time
	stopped chan struct{}    // closed when a cleanup found ctx ended
}

func (t *Tuner) apply() {
	metrics.Read(t.sample)
	live := uint64(0)
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	debug.SetGCPercent(gcPercentFor(live)) // cheap: a lock, no stop of the world
}

// gcSentinel is large enough not to be a tiny allocation, whose cleanup
// could wait on its neighbours in the same block.
type gcSentinel struct{ _ [16]byte }

func (t *Tuner) arm() {
	runtime.AddCleanup(&gcSentinel{}, func(t *Tuner) {
		if t.ctx.Err() != nil {
			close(t.stopped)
			return
		}
		t.apply()
		t.arm()
	}, t)
}

package pmscheck

import (
	"runtime/debug"
	"runtime/metrics"
)

// LimitMemory sets a soft memory limit (runtime/debug.SetMemoryLimit) for
// a check's walk under bound: what the process uses now plus 1.375 times
// the bound, so that the garbage of decoding each page whole for the schemas
// is collected in time (docs/resilience.md, "Memory of a walk"). It returns
// the function that puts the previous limit back. A caller leaves the limit
// alone when the operator set GOMEMLIMIT.
func LimitMemory(bound int64) (restore func()) {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	var used int64
	if s[0].Value.Kind() == metrics.KindUint64 && s[1].Value.Kind() == metrics.KindUint64 {
		used = int64(s[0].Value.Uint64() - s[1].Value.Uint64())
	}
	old := debug.SetMemoryLimit(used + bound + bound*3/8)
	return func() { debug.SetMemoryLimit(old) }
}

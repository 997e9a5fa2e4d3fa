package observability

import "sync/atomic"

// CacheSlotKey is the context key of a request's *CacheSlot. A request
// context of its own (the edge's) may answer Value(CacheSlotKey{}) with the
// slot it keeps in its per-request state, so the slot costs no context of
// its own.
type CacheSlotKey struct{}

// CacheSlot carries how the cache answered one request from the cache
// (PMSMetrics.Cache) to the request's duration metric (Metrics.RequestDone),
// so that the latency SLO can tell cached answers from misses. The first
// outcome reported wins. The zero value is empty and ready to use; it is
// safe for concurrent use (a shared load may report from its own goroutine).
type CacheSlot struct{ v atomic.Int32 } // index into CacheOutcomes, plus one

func (s *CacheSlot) set(o CacheOutcome) {
	for i, k := range CacheOutcomes {
		if k == o {
			s.v.CompareAndSwap(0, int32(i+1))
			return
		}
	}
}

// Outcome is the first outcome reported, or "" when none was.
func (s *CacheSlot) Outcome() CacheOutcome {
	if i := s.v.Load(); i > 0 {
		return CacheOutcomes[i-1]
	}
	return ""
}

package observability

import (
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
)

// CacheSlotKey is the context key of a request's *CacheSlot. A request
// context of its own (the edge's) may answer Value(CacheSlotKey{}) with the
// slot it keeps in its per-request state, so the slot costs no context of
// its own.
type CacheSlotKey struct{}

// CacheSlot carries how the cache answered one request, from the cache
// (upstream/cache's Metrics.Lookup) to the request's duration metric
// (Metrics.RequestDone), so that the latency SLO can tell cached answers
// from misses. The label (partner_edge.cache.outcome=hit...) is the
// cache's vocabulary: observability passes it on and knows none of its
// values; the cache sets only its fixed few, so labels stay bounded. The
// first label set wins. The zero value is empty and ready to use; it is
// safe for concurrent use (a shared load may report from its own
// goroutine).
type CacheSlot struct {
	v atomic.Pointer[attribute.KeyValue]
}

// Set records kv unless a label was set before. kv must be one of a fixed
// few (it becomes a metric label); the caller keeps it, so Set does not
// allocate.
func (s *CacheSlot) Set(kv *attribute.KeyValue) { s.v.CompareAndSwap(nil, kv) }

// Attr is the first label set, and whether one was.
func (s *CacheSlot) Attr() (attribute.KeyValue, bool) {
	if kv := s.v.Load(); kv != nil {
		return *kv, true
	}
	return attribute.KeyValue{}, false
}

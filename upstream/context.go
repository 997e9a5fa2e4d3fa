package upstream

import (
	"context"
	"sync/atomic"
)

// CallerIDs identify the partner request on whose behalf the PMS is called.
// The client sends them as X-Request-Id and X-Correlation-Id.
type CallerIDs struct {
	RequestID     string
	CorrelationID string // empty when the partner sent none (or an invalid one)
	// Stats, when not nil, collects what the PMS layers did for this
	// request, for its access log line. Nil: nothing is collected.
	Stats *CallStats
}

// CallStats counts, for one partner request, the PMS attempts made on its
// behalf and the cache's answer. Safe for concurrent use; the methods of a
// nil *CallStats do nothing. A coalesced request records "coalesced" and no
// attempts: the attempts belong to the request that led the load.
type CallStats struct {
	attempts atomic.Int32
	cache    atomic.Pointer[string]
}

// AddAttempt counts one PMS attempt.
func (s *CallStats) AddAttempt() {
	if s != nil {
		s.attempts.Add(1)
	}
}

// SetCacheOutcome records the cache's answer: hit, miss, stale or coalesced.
func (s *CallStats) SetCacheOutcome(outcome string) {
	if s != nil {
		s.cache.Store(&outcome)
	}
}

// Attempts is the number of PMS attempts counted.
func (s *CallStats) Attempts() int {
	if s == nil {
		return 0
	}
	return int(s.attempts.Load())
}

// CacheOutcome is the recorded cache answer, or "" when the cache was not
// consulted.
func (s *CallStats) CacheOutcome() string {
	if s == nil {
		return ""
	}
	if p := s.cache.Load(); p != nil {
		return *p
	}
	return ""
}

type callerKey struct{}

// WithCallerIDs returns ctx carrying ids.
func WithCallerIDs(ctx context.Context, ids CallerIDs) context.Context {
	return context.WithValue(ctx, callerKey{}, ids)
}

// CallerIDsFrom returns the ids carried by ctx, or zero values.
func CallerIDsFrom(ctx context.Context) CallerIDs {
	ids, _ := ctx.Value(callerKey{}).(CallerIDs)
	return ids
}

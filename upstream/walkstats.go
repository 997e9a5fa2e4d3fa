package upstream

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/partner-edge/partner-edge/mapping"
)

// WalkStats counts what one list walk saw, for its log line, its metrics
// and its span (docs/contract.md section 24; docs/observability.md,
// "Walks"). Whoever owns the walk (the cache) puts one in the walk's
// context (WithWalkStats); WalkHotels counts the pages and records,
// RejectionMetrics.Rejected the rejections by reason and the span events
// it added. The zero value is ready; it is safe for concurrent use.
type WalkStats struct {
	pages, records atomic.Int64
	rejected       [rejectionSlots]atomic.Int64 // by reasonSlot
	// events: mapping.rejected events added to the walk's span; retries:
	// pms.retry events added to its list span. Past RejectionEventsPerWalk
	// (RetryEventsPerWalk) no more are added: the summary counts them.
	events, retries atomic.Int64
	// newly: rejected records that the previous walk did not reject
	// (MarkNew, counted by whoever tells them apart: the cache).
	newly atomic.Int64

	exMu     sync.Mutex
	examples map[mapping.Reason][]string // the first ExamplesPerReason ids rejected for each reason
	// walkTime and leaseWait: set by a load that did more than walk (a
	// fleet member, SetWalkTime, SetLeaseWait); waited: leaseWait is set.
	walkTime, leaseWait atomic.Int64
	waited              atomic.Bool
}

// SetWalkTime records how long the PMS walk itself took, for a load that
// did more than walk (a fleet member waits for another's lease first, and
// publishes after): the walk's duration is this, not the load's
// (docs/contract.md section 24).
func (s *WalkStats) SetWalkTime(d time.Duration) { s.walkTime.Store(int64(max(d, 1))) }

// WalkTime is what SetWalkTime recorded; 0: the load was the walk.
func (s *WalkStats) WalkTime() time.Duration { return time.Duration(s.walkTime.Load()) }

// SetLeaseWait records how long a fleet member's load waited for another
// member's lease (its walk, or its lease to expire) before walking or
// taking the publication: measured apart from the walk.
func (s *WalkStats) SetLeaseWait(d time.Duration) {
	s.leaseWait.Store(int64(max(d, 0)))
	s.waited.Store(true)
}

// LeaseWait is what SetLeaseWait recorded; ok false: nothing (no fleet).
func (s *WalkStats) LeaseWait() (d time.Duration, ok bool) {
	return time.Duration(s.leaseWait.Load()), s.waited.Load()
}

// ExamplesPerReason is how many ids of rejected records a walk's summary
// names per reason (RejectionAttrs): enough to find them in the PMS, few
// enough for one log line at any brand's size.
const ExamplesPerReason = 3

// Span event caps of one walk. The SDK keeps at most 128 events per span
// by default (OTEL_SPAN_EVENT_COUNT_LIMIT) and logs "limit reached" once
// for every span that passes it; a walk of a large brand with a share of
// unmappable records would pass it every time. Below the cap each
// rejection (and each retry) is an event as before; past it, the walk's
// span carries the counts per reason (Summary).
const (
	RejectionEventsPerWalk = 100
	RetryEventsPerWalk     = 100
)

// rejectionSlots: a counter per mapping.Reasons entry (eight today;
// TestWalkStatsHasASlotPerReason), the last one for any other reason.
const rejectionSlots = 16

// reasonSlot is the counter index of r.
func reasonSlot(r mapping.Reason) int {
	for i, known := range mapping.Reasons {
		if known == r && i < rejectionSlots-1 {
			return i
		}
	}
	return rejectionSlots - 1
}

type walkStatsKey struct{}

// WithWalkStats returns ctx carrying st: the walk run under it counts into st.
func WithWalkStats(ctx context.Context, st *WalkStats) context.Context {
	return context.WithValue(ctx, walkStatsKey{}, st)
}

// WalkStatsFrom returns the WalkStats ctx carries, or nil.
func WalkStatsFrom(ctx context.Context) *WalkStats {
	st, _ := ctx.Value(walkStatsKey{}).(*WalkStats)
	return st
}

// Pages is the number of list pages received.
func (s *WalkStats) Pages() int64 { return s.pages.Load() }

// Records is the number of records received (mapped or not).
func (s *WalkStats) Records() int64 { return s.records.Load() }

// Rejected is the number of records that could not be mapped.
func (s *WalkStats) Rejected() int64 {
	var n int64
	for i := range s.rejected {
		n += s.rejected[i].Load()
	}
	return n
}

// RejectedBy returns the rejections by reason (reasons with none left
// out; a reason outside mapping.Reasons is "unknown").
func (s *WalkStats) RejectedBy() map[mapping.Reason]int64 {
	out := map[mapping.Reason]int64{}
	for i := range s.rejected {
		if n := s.rejected[i].Load(); n > 0 {
			r := mapping.Reason("unknown")
			if i < len(mapping.Reasons) && i < rejectionSlots-1 {
				r = mapping.Reasons[i]
			}
			out[r] = n
		}
	}
	return out
}

// Attributes of a walk's span summary (Summary).
const (
	// AttrWalkRejected is the number of records the walk could not map.
	AttrWalkRejected = attribute.Key("partner_edge.walk.rejected")
	// AttrRejectedEventsDropped is how many of them have no
	// mapping.rejected event (past RejectionEventsPerWalk).
	AttrRejectedEventsDropped = attribute.Key("partner_edge.walk.rejected_events_dropped")
	// AttrRejectedByPrefix, followed by a reason, is the number of
	// records rejected for that reason (partner_edge.walk.rejected.too_long).
	AttrRejectedByPrefix = "partner_edge.walk.rejected."
)

// Summary is the walk's account for its span: pages, records, rejections
// in all and by reason, and how many rejections had no event of their own.
func (s *WalkStats) Summary() []attribute.KeyValue {
	rejected := s.Rejected()
	kv := []attribute.KeyValue{AttrPages.Int64(s.Pages()), AttrRecords.Int64(s.Records()),
		AttrWalkRejected.Int64(rejected),
		AttrRejectedEventsDropped.Int64(max(rejected-min(s.events.Load(), RejectionEventsPerWalk), 0))}
	for r, n := range s.RejectedBy() {
		kv = append(kv, attribute.Int64(AttrRejectedByPrefix+string(r), n))
	}
	return kv
}

// MarkNew counts one rejected record that the previous walk did not
// reject.
func (s *WalkStats) MarkNew() { s.newly.Add(1) }

// Newly is the number of rejected records the previous walk did not
// reject (MarkNew).
func (s *WalkStats) Newly() int64 { return s.newly.Load() }

// example keeps id as an example of reason while there are fewer than
// ExamplesPerReason.
func (s *WalkStats) example(id string, r mapping.Reason) {
	s.exMu.Lock()
	defer s.exMu.Unlock()
	if s.examples == nil {
		s.examples = make(map[mapping.Reason][]string, 2)
	}
	if len(s.examples[r]) < ExamplesPerReason {
		s.examples[r] = append(s.examples[r], id)
	}
}

// RejectionAttrs are the rejections of the walk for its one log line
// (docs/operations.md, "What to watch"): the count per reason, how many the
// previous walk did not reject, and up to ExamplesPerReason ids per
// reason; none when nothing was rejected. A brand of 50,000 hotels with
// thousands of unmappable records logs this one line per walk, not a
// line per record.
func (s *WalkStats) RejectionAttrs() []any {
	by := s.RejectedBy()
	if len(by) == 0 {
		return nil
	}
	counts := make(map[string]int64, len(by))
	for r, n := range by {
		counts[string(r)] = n
	}
	s.exMu.Lock()
	examples := make(map[string][]string, len(s.examples))
	for r, ids := range s.examples {
		examples[string(r)] = slices.Clone(ids)
	}
	s.exMu.Unlock()
	return []any{"rejected_by", counts, "rejected_new", s.Newly(), "rejected_examples", examples}
}

// page counts one page of records.
// Page counts one page of records.
func (s *WalkStats) Page(records int) {
	s.pages.Add(1)
	s.records.Add(int64(records))
}

// reject counts one rejection and reports whether it may still be a span
// event of its own.
func (s *WalkStats) reject(id string, r mapping.Reason) bool {
	s.rejected[reasonSlot(r)].Add(1)
	s.example(id, r)
	return s.events.Add(1) <= RejectionEventsPerWalk
}

// retryEvent reports whether one more retry may be a span event.
func (s *WalkStats) retryEvent() bool { return s.retries.Add(1) <= RetryEventsPerWalk }

// pageHookKey carries a function WalkHotels calls after each page
// arrives (OnPage).
type pageHookKey struct{}

// OnPage returns ctx with fn called after each list page a walk under it
// receives, on the walk's goroutine, before the page's records are
// handed over: the fleet renews its walk lease as pages arrive
// (docs/scaling.md). fn must be quick. A hook already in ctx is called
// too, first.
func OnPage(ctx context.Context, fn func()) context.Context {
	if prev := PageHookFrom(ctx); prev != nil {
		next := fn
		fn = func() { prev(); next() }
	}
	return context.WithValue(ctx, pageHookKey{}, fn)
}

// PageHookFrom is the function WithPageHook put in ctx, or nil.
func PageHookFrom(ctx context.Context) func() {
	fn, _ := ctx.Value(pageHookKey{}).(func())
	return fn
}

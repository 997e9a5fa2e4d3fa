package observability

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Tail sampling: docs/observability.md, "Sampling". A request the head
// sampler dropped keeps a cheap non-recording server span; the spans
// beneath it record and are held here until Decide keeps (5xx, slow) or
// drops them.

// AttrKeptBy is set on the server span of a trace the head sampler dropped
// and the edge kept: "error" (a 5xx answer), "slow", or "link" (a kept
// trace links to it: the request started a walk, or led a load others
// joined; KeepRequest, LeadLoad).
const AttrKeptBy = attribute.Key("partner_edge.trace.kept_by")

// Values of AttrKeptBy.
const (
	keptByError = "error"
	keptBySlow  = "slow"
	keptByLink  = "link"
)

// maxPendingTraces bounds the traces held at once, and maxPendingSpans the
// spans of each: past them a held span is dropped (a trace cannot hold the
// process's memory). A trace still undecided maxHold after it was first
// held is forgotten once the table is full (a mark on a request that had
// already decided: KeepRequest), at most once per maxHold/60.
const (
	maxPendingTraces = 4096
	maxPendingSpans  = 512
	maxHold          = 5 * time.Minute
)

// tailSampler is the configured (head) sampler for roots and spans of a
// remote parent; a span started under a local parent records, sampled
// (under a request whose head decision dropped it: held until the request
// decides); the server span Decide makes again, and a root under KeepTrace,
// are kept.
type tailSampler struct{ head sdktrace.Sampler }

func (s tailSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	psc := trace.SpanContextFromContext(p.ParentContext)
	if p.ParentContext.Value(dropKey{}) != nil {
		return sdktrace.SamplingResult{Decision: sdktrace.Drop} // a walk KeepWalk left out, and all beneath it
	}
	if p.ParentContext.Value(keepKey{}) != nil {
		return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
	}
	// The server span made again by Decide is kept. A span under a local
	// parent follows it, sampled or held: the head decision is the
	// request's (or the walk's), made once at its root, whatever the sampler
	// (traceidratio and always_off, which are not parent-based, would
	// otherwise cut a kept trace's PMS attempts out).
	if _, forced := p.ParentContext.Value(forcedIDsKey{}).(forcedIDs); forced || psc.IsValid() && !psc.IsRemote() {
		return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: psc.TraceState()}
	}
	return s.head.ShouldSample(p)
}

func (s tailSampler) Description() string { return "Tail{" + s.head.Description() + "}" }

// pendingTrace is a trace whose request has not decided yet, or has and
// still has spans open (they follow the decision as they end).
type pendingTrace struct {
	spans   []sdktrace.ReadOnlySpan
	links   []trace.Link // LinkRequest's, for the server span made again
	live    int          // spans started and not yet ended
	decided bool         // Decide was called
	keep    bool         // its outcome
	force   bool         // KeepRequest: kept whatever its outcome
	lead    bool         // LeadLoad: kept, its followers link to it (took a token)
	born    time.Time    // when first held
}

// tailProcessor holds the spans of pending traces and passes every other
// span on to next (the batcher, or the syncer of Config.SpanExporter).
type tailProcessor struct {
	next sdktrace.SpanProcessor
	mu   sync.Mutex
	held map[trace.TraceID]*pendingTrace
	// n is len(held), read without the lock by decide: a cached answer
	// (no span beneath its server span) then costs one atomic load.
	n atomic.Int64
	// budget bounds the traces kept by outcome (keepBudget; nil: no
	// bound), loss counts those it leaves out.
	budget    *keepBudget
	loss      *loss
	now       func() time.Time
	lastSweep time.Time // guarded by mu
}

// pendingChild: s was started under a local, unsampled parent (tailSampler
// recorded it for its request's decision).
func pendingChild(s sdktrace.ReadOnlySpan) bool {
	p := s.Parent()
	return p.IsValid() && !p.IsRemote() && !p.IsSampled()
}

// pending is trace tid's, made when create and there is room; called with
// mu held.
func (t *tailProcessor) pending(tid trace.TraceID, create bool) *pendingTrace {
	p := t.held[tid]
	if p != nil || !create {
		return p
	}
	if len(t.held) >= maxPendingTraces {
		t.sweep()
	}
	if len(t.held) < maxPendingTraces {
		p = &pendingTrace{born: t.now()}
		t.held[tid] = p
		t.n.Add(1)
	}
	return p
}

// sweep forgets the traces held undecided for longer than maxHold (no
// request waits so long: a mark made after its request had decided);
// called with mu held, when the table is full.
func (t *tailProcessor) sweep() {
	now := t.now()
	if now.Sub(t.lastSweep) < maxHold/60 {
		return
	}
	t.lastSweep = now
	for tid, p := range t.held {
		if !p.decided && now.Sub(p.born) > maxHold {
			t.unlead(p)
			delete(t.held, tid)
			t.n.Add(-1)
		}
	}
}

// release forgets p once it is decided and its last span has ended; called
// with mu held.
func (t *tailProcessor) release(tid trace.TraceID, p *pendingTrace) {
	if p.decided && p.live <= 0 {
		delete(t.held, tid)
		t.n.Add(-1)
	}
}

func (t *tailProcessor) OnStart(ctx context.Context, s sdktrace.ReadWriteSpan) {
	child := pendingChild(s)
	t.mu.Lock()
	p := t.pending(s.SpanContext().TraceID(), child)
	if p != nil {
		p.live++
	}
	t.mu.Unlock()
	if p == nil && !child {
		t.next.OnStart(ctx, s)
	}
}

func (t *tailProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	tid := s.SpanContext().TraceID()
	t.mu.Lock()
	p := t.held[tid]
	if p == nil {
		t.mu.Unlock()
		if !pendingChild(s) { // a pending child of a trace past maxPendingTraces is dropped
			t.next.OnEnd(s)
		}
		return
	}
	p.live--
	forward := p.decided && p.keep
	if !p.decided && len(p.spans) < maxPendingSpans {
		p.spans = append(p.spans, s)
	}
	t.release(tid, p)
	t.mu.Unlock()
	if forward {
		t.next.OnEnd(s)
	}
}

// holdLink keeps l for the server span of trace tid, should it be kept.
func (t *tailProcessor) holdLink(tid trace.TraceID, l trace.Link) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.pending(tid, true); p != nil && len(p.links) < maxPendingSpans {
		p.links = append(p.links, l)
	}
}

// decide ends the wait of trace tid, whose outcome asks to keep it for
// why (keptByError, keptBySlow; "": it does not). It returns why the trace
// is kept ("": dropped): for its outcome, when the keep budget allows
// (the others are counted), or for a mark (KeepRequest, LeadLoad) whatever
// the outcome and the budget. Its held spans are exported when kept,
// dropped otherwise, and so are those still open as they end. It returns
// the links held for its server span too.
func (t *tailProcessor) decide(tid trace.TraceID, why string) (string, []trace.Link) {
	if t.n.Load() == 0 {
		if why == "" || t.admit(why) {
			return why, nil
		}
		return "", nil
	}
	t.mu.Lock()
	p := t.held[tid]
	marked := p != nil && (p.force || p.lead)
	switch {
	case marked && why == "":
		why = keptByLink
	case !marked && why != "" && !t.admit(why):
		why = ""
	}
	if p == nil {
		t.mu.Unlock()
		return why, nil
	}
	spans, links := p.spans, p.links
	p.spans, p.links, p.decided, p.keep = nil, nil, true, why != ""
	t.release(tid, p)
	t.mu.Unlock()
	if why != "" {
		for _, s := range spans {
			t.next.OnEnd(s)
		}
	}
	return why, links
}

// admit asks the keep budget for a trace kept for why, and counts it
// unkept when refused: errors may take the whole budget, slow requests
// leave half of it to errors (docs/observability.md, "Sampling").
func (t *tailProcessor) admit(why string) bool {
	if t.budget == nil {
		return true
	}
	if why == keptByError {
		if t.budget.take(0) {
			return true
		}
		t.loss.unkept.Add(unkeptError, 1)
		return false
	}
	if t.budget.take(t.budget.forErrors) {
		return true
	}
	t.loss.unkept.Add(unkeptSlow, 1)
	return false
}

func (t *tailProcessor) Shutdown(ctx context.Context) error   { return t.next.Shutdown(ctx) }
func (t *tailProcessor) ForceFlush(ctx context.Context) error { return t.next.ForceFlush(ctx) }

// forcedIDs are the ids the server span made again by Decide takes: those
// its non-recording first self had, which the PMS and the logs already know.
type forcedIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

type forcedIDsKey struct{}

// tailIDs is the SDK's random id generator (math/rand/v2's), but the ids
// in the context's forcedIDs win.
type tailIDs struct{}

func (tailIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if f, ok := ctx.Value(forcedIDsKey{}).(forcedIDs); ok {
		return f.trace, f.span
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, randomSpanID()
}

func (tailIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if f, ok := ctx.Value(forcedIDsKey{}).(forcedIDs); ok {
		return f.span
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}

// Decide is the tail decision of the request of ctx (its server span made
// by StartServerSpan), once it is answered: status is the status sent,
// elapsed its time, start when it began. It reports whether the trace is
// kept: always when the head sampler kept it; otherwise when status is 5xx
// or elapsed is at least Config.KeepSlowerThan (when set), within the
// keep budget (Config.KeepRate: 5xx first, then slow; the others counted in
// partner_edge.traces.unkept); and whatever its outcome when a kept trace
// links to it (KeepRequest, LeadLoad). The returned
// context holds the span to annotate (SetRoute, SetResponse): ctx's own,
// or, for a trace kept here, the server span made again (same ids, start
// time start, the request's attributes); end it with end (at the time
// given). The spans held for the trace are exported or dropped now.
//
// Without telemetry, or with tracing disabled, it keeps nothing.
func (t *Telemetry) Decide(ctx context.Context, r *http.Request, start time.Time, status int, elapsed time.Duration) (_ context.Context, kept bool, end func(time.Time)) {
	sc := trace.SpanContextFromContext(ctx)
	if t == nil || t.tail == nil || !sc.IsValid() || sc.IsSampled() {
		return ctx, sc.IsSampled(), noEnd
	}
	why := ""
	switch {
	case status >= 500:
		why = keptByError
	case t.slow > 0 && elapsed >= t.slow:
		why = keptBySlow
	}
	why, links := t.tail.decide(sc.TraceID(), why)
	if why == "" {
		return ctx, false, noEnd
	}
	pctx := context.WithValue(ctx, forcedIDsKey{}, forcedIDs{sc.TraceID(), sc.SpanID()})
	pctx = trace.ContextWithSpanContext(pctx, trace.SpanContext{})
	if _, sent := r.Header["Traceparent"]; sent {
		pctx = propagation.TraceContext{}.Extract(pctx, traceHeaders{propagation.HeaderCarrier(r.Header)})
	}
	var kv [maxRequestAttrs]attribute.KeyValue
	_, span := t.serverTracer.Start(pctx, spanMethod(r.Method),
		trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start),
		trace.WithAttributes(requestAttrs(kv[:0], r)...), trace.WithLinks(links...))
	span.SetAttributes(AttrKeptBy.String(why))
	// The span goes into ctx (its values: the request's state, the cache's
	// slot), not pctx's forced ids.
	return trace.ContextWithSpan(ctx, span), true, func(at time.Time) {
		span.End(trace.WithTimestamp(at))
	}
}

func noEnd(time.Time) {}

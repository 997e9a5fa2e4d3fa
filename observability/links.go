package observability

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// Links that open (docs/observability.md, "Walks"; docs/contract.md
// section 22): a kept trace links only to traces that are kept. A walk is
// kept within the keep budget (KeepWalk) and the request that started it
// with it (KeepRequest); with TTL 0, the request that led a load others
// joined is kept for their links (LeadLoad); a request that links to a
// walk holds its link until its own decision (LinkRequest).

// keepKey marks a context whose root span is kept (KeepTrace); dropKey
// one whose root span, and every span beneath it, is dropped (a walk
// KeepWalk left out). tailSampler reads both.
type (
	keepKey struct{}
	dropKey struct{}
)

// KeepWalk decides whether a walk of the PMS about to start under ctx (a
// root span of its own, linked to the request of ctx: upstream/cache) is
// kept, and returns the context to start its root span under. Walks are
// few and what an SRE reads first when the PMS misbehaves: they are kept
// whatever the head sampler says, within the keep budget (Config.KeepRate)
// at the rank of an error: a token for the walk, and one more for the
// request of ctx when the head sampler did not keep it (the walk links to
// it: KeepRequest then marks it at no cost). Beyond the budget (a PMS
// outage before any snapshot: each request starts a walk) the walk is left
// out whole, its spans neither recorded nor held, and counted
// (partner_edge_traces_unkept_total{reason="walk"}); nothing may link to
// it. Without tail decisions, ctx under KeepTrace and true.
func (t *Telemetry) KeepWalk(ctx context.Context) (context.Context, bool) {
	if t == nil || t.tail == nil || t.tail.budget == nil {
		return KeepTrace(ctx), true
	}
	n := 1.0
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() && !sc.IsSampled() {
		n = 2
	}
	if t.tail.budget.takeN(n, 0) {
		return KeepTrace(ctx), true
	}
	t.loss.unkept.Add(unkeptWalk, 1)
	return context.WithValue(ctx, dropKey{}, true), false
}

// KeepTrace marks ctx so that a root span started under it (a walk of the
// PMS: upstream/cache) is kept whatever the head sampler says, when the
// Telemetry decides tails (Config.TailSampling).
func KeepTrace(ctx context.Context) context.Context {
	return context.WithValue(ctx, keepKey{}, true)
}

// mark sets trace tid kept whatever its outcome (KeepRequest): true when
// it is or will be kept; false when it cannot be (decided and dropped, or
// no room).
func (t *tailProcessor) mark(tid trace.TraceID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pending(tid, true)
	switch {
	case p == nil:
		return false
	case p.decided:
		return p.keep
	}
	p.force = true
	return true
}

// claimLead marks trace tid, a request that led a load, kept for its
// followers (LeadLoad), taking a token of the budget at the rank of a
// slow request: kept reports it kept anyway (marked by KeepRequest),
// marked that this call marked it. It never makes an entry: a leader
// whose children were held has one until it decides.
func (t *tailProcessor) claimLead(tid trace.TraceID) (kept, marked bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.held[tid]
	switch {
	case p == nil:
		return false, false
	case p.decided:
		return p.keep, false
	case p.force || p.lead:
		return true, false
	case t.budget != nil && !t.budget.take(t.budget.forErrors):
		return false, false
	}
	p.lead = true
	return false, true
}

// dropLead undoes claimLead's mark of tid, when nobody joined the load:
// the token goes back.
func (t *tailProcessor) dropLead(tid trace.TraceID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.held[tid]; p != nil && !p.decided {
		t.unlead(p)
	}
}

// unlead clears p's lead mark and gives its token back; called with mu
// held.
func (t *tailProcessor) unlead(p *pendingTrace) {
	if p.lead {
		p.lead = false
		if t.budget != nil {
			t.budget.give()
		}
	}
}

// LinkRequest links the server span of ctx (a request's) to l: at once
// when the span records; for a request whose trace the head sampler
// dropped, held until Decide, and carried by the server span made again
// if the trace is kept (a request that waited for a walk, then failed).
func (t *Telemetry) LinkRequest(ctx context.Context, l trace.Link) {
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		span.AddLink(l)
		return
	}
	if sc := span.SpanContext(); t != nil && t.tail != nil && sc.IsValid() && !sc.IsSampled() {
		t.tail.holdLink(sc.TraceID(), l)
	}
}

// KeepRequest marks the trace of ctx's request kept whatever its outcome
// (Decide: kept_by link), for a trace that links to it and is kept: a
// walk links to the request that started it (upstream/cache), and an SRE
// never follows a link to a trace the backend does not hold. It reports
// whether the request's trace is or will be kept: true when the head
// sampler kept it, or once marked; false without a request span, without
// tail decisions, when the request decided already without keeping it,
// or when the table of held traces is full. Then the caller does not link
// to it. Marks are not bounded by Config.KeepRate: a walk is one per cache
// TTL at most.
func (t *Telemetry) KeepRequest(ctx context.Context) bool {
	sc := trace.SpanContextFromContext(ctx)
	switch {
	case !sc.IsValid():
		return false
	case sc.IsSampled():
		return true
	case t == nil || t.tail == nil:
		return false
	}
	return t.tail.mark(sc.TraceID())
}

// Lead is the claim of a request that led a load other requests may have
// joined (upstream/cache with TTL 0, where the load is the leader's own
// PMS call): whether its trace is kept, so that they may link to it. Made
// by LeadLoad before the followers see the result, settled by the leader
// (Settle) once it knows whether anyone joined. The zero Lead is not
// linkable.
type Lead struct {
	tail   *tailProcessor
	sc     trace.SpanContext
	ok     bool // linkable: the trace is kept
	marked bool // LeadLoad marked it (and took a token): Settle may undo
}

// LeadLoad claims that the request of ctx, which led a load, be kept
// should its followers link to it (Lead): a trace the head sampler kept,
// or one KeepRequest marked, is linkable at no cost; another is marked
// kept (kept_by link) when the keep budget (Config.KeepRate) gives it a
// token at the rank of a slow request, else it is not linkable. Call it
// when the load has ended, before the followers read its result; the
// leader calls Settle once it knows whether anyone joined.
func (t *Telemetry) LeadLoad(ctx context.Context) Lead {
	sc := trace.SpanContextFromContext(ctx)
	switch {
	case !sc.IsValid():
		return Lead{}
	case sc.IsSampled():
		return Lead{sc: sc, ok: true}
	case t == nil || t.tail == nil:
		return Lead{}
	}
	kept, marked := t.tail.claimLead(sc.TraceID())
	return Lead{tail: t.tail, sc: sc, ok: kept || marked, marked: marked}
}

// Link is what a follower links to: the leader's span context, and
// whether it may (the leader's trace is kept).
func (l Lead) Link() (trace.SpanContext, bool) { return l.sc, l.ok }

// Settle ends the claim: when nobody joined the load, LeadLoad's mark is
// undone and its token given back (the leader is then kept only for its
// own outcome).
func (l Lead) Settle(joined bool) {
	if l.marked && !joined {
		l.tail.dropLead(l.sc.TraceID())
	}
}

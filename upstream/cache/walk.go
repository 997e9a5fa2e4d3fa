package cache

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/observability"
)

// SpanWalk is the root span of one load of the brand's snapshot (a walk of
// the PMS's list, or a fleet member's share of one): a trace of its own,
// not a part of the request that happened to start it, which may have
// answered long before (docs/contract.md section 20; docs/observability.md,
// "Walks"). Its pages and attempts are beneath it; it links to the request
// that started it (none for a walk Prime started), and that request, and
// each one that joined the load in flight, links to it.
const SpanWalk = "pms.walk"

// Walk kinds (AttrWalkKind): why the snapshot was loaded.
const (
	WalkFirstLoad    = "first_load"    // nothing was held
	WalkRefresh      = "refresh"       // the held snapshot had expired
	WalkRefreshAhead = "refresh_ahead" // in the background, before expiry
	// walkStarted: the caller started the walk span already (refresh).
	walkStarted = ""
	// WalkLoad: TTL 0, every read loads for itself. Such a load is the
	// request's own work and stays in its trace, with no walk span.
	WalkLoad = "load"
)

// Attributes of the walk span and of the links to and from it.
const (
	AttrWalkKind = attribute.Key("partner_edge.walk.kind")
	// AttrWalkOutcome is "ok" or "failed", set when the walk ends: what
	// an SRE searches failed walks by (a trace backend's search by status
	// is not to be relied on: docs/observability.md, "Finding traces").
	AttrWalkOutcome = attribute.Key("partner_edge.walk.outcome")
	// AttrLinkRole says what a link is: on the walk, "started_by" (the
	// request); on a request, "walk" (the walk it started or waited for)
	// and "leader" (the request whose load it joined).
	AttrLinkRole = attribute.Key("partner_edge.link.role")
)

var (
	attrWalkOK     = AttrWalkOutcome.String("ok")
	attrWalkFailed = AttrWalkOutcome.String("failed")
	linkStartedBy  = []attribute.KeyValue{AttrLinkRole.String("started_by")}
	linkWalk       = []attribute.KeyValue{AttrLinkRole.String("walk")}
	linkLeader     = []attribute.KeyValue{AttrLinkRole.String("leader")}
)

// walkLinks are the span contexts of the latest walk and of the request
// that started it, for the requests that joined it (followers).
type walkLinks struct {
	walk, leader trace.SpanContext
}

// startWalk starts the walk span of a load of kind under ctx's values and
// returns its context and its end. Without a tracer it does nothing.
//
// A walk is always kept, and an SRE never follows a link to a trace the
// backend does not hold: the request that started the walk is kept too
// (KeepRequest: kept_by link), and linked to only when it will be.
func (c *Cache) startWalk(ctx context.Context, kind string) (context.Context, func(error)) {
	if c.cfg.Tracer == nil || kind == WalkLoad || kind == walkStarted {
		return ctx, func(error) {}
	}
	caller := trace.SpanContextFromContext(ctx)
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(AttrWalkKind.String(kind))}
	// Walks are few (one per brand and TTL at most) and what an SRE looks
	// at first when the PMS misbehaves: each is kept, whatever the sampler,
	// within the keep budget (a PMS outage before any snapshot makes one
	// per request).
	sctx, kept := c.cfg.KeepWalk(ctx)
	if kept && caller.IsValid() && c.cfg.KeepRequest(ctx) {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: caller, Attributes: linkStartedBy}))
	} else {
		caller = trace.SpanContext{} // not kept: nobody links to it
	}
	wctx, span := c.cfg.Tracer.Start(sctx, SpanWalk, opts...)
	links := &walkLinks{} // a walk left out: nothing links to it
	if kept {
		c.cfg.LinkRequest(ctx, trace.Link{SpanContext: span.SpanContext(), Attributes: linkWalk})
		links = &walkLinks{walk: span.SpanContext(), leader: caller}
	}
	if !c.disabled {
		// With TTL 0 the walks with a span are the feed's, on the clock; a
		// read's own load has none, and its followers link to their leader
		// (followLeader), never to an unrelated walk of the feed's.
		c.lastWalk.Store(links)
	}
	return wctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "walk failed")
			span.SetAttributes(attrWalkFailed)
		} else {
			span.SetAttributes(attrWalkOK)
		}
		span.End()
	}
}

// ledLoad is the result of a load with TTL 0 (the leader's own PMS call,
// no walk): its value and the leader's claim, for the followers' links
// (waiter.lead makes it; followLeader reads it).
type ledLoad struct {
	v    any
	lead observability.Lead
}

// followLeader unwraps v, a shared load's result for the caller of ctx
// (ran: the caller led it): a follower of a load with TTL 0 links to its
// leader when the leader's trace is kept (observability.Lead).
func (c *Cache) followLeader(ctx context.Context, v any, ran bool) any {
	l, ok := v.(*ledLoad)
	if !ok {
		return v
	}
	if sc, linkable := l.lead.Link(); linkable && !ran {
		c.cfg.LinkRequest(ctx, trace.Link{SpanContext: sc, Attributes: linkLeader})
	}
	return l.v
}

// linkFollower links the span of ctx, a request that joined a load in
// flight, to that load's walk and to the request that leads it, if one
// does (a walk Prime started has none).
func (c *Cache) linkFollower(ctx context.Context) {
	if c.cfg.Tracer == nil || !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	if l := c.lastWalk.Load(); l != nil {
		if l.walk.IsValid() {
			c.cfg.LinkRequest(ctx, trace.Link{SpanContext: l.walk, Attributes: linkWalk})
		}
		if l.leader.IsValid() {
			c.cfg.LinkRequest(ctx, trace.Link{SpanContext: l.leader, Attributes: linkLeader})
		}
	}
}

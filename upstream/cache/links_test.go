package cache_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
)

// blockingCatalog answers once release is closed, each call under a span
// of its own (as the PMS client's pms.get_hotel and pms.list_hotels are):
// the caller's trace holds a child, as a real load's does.
type blockingCatalog struct {
	now     func() time.Time // stamps the snapshot: the cache's clock
	tracer  trace.Tracer
	release chan struct{}
	err     error
}

func (b *blockingCatalog) Snapshot(ctx context.Context) (*upstream.Snapshot, error) {
	_, span := b.tracer.Start(ctx, "pms.list_hotels")
	defer span.End()
	<-b.release
	return upstream.SnapshotOf(nil, b.now()), b.err
}

func (b *blockingCatalog) Property(ctx context.Context, id string) (*upstream.Item, error) {
	_, span := b.tracer.Start(ctx, "pms.get_hotel")
	defer span.End()
	<-b.release
	if b.err != nil {
		return nil, b.err
	}
	return upstream.NewItem(mapping.Property{ID: id, Name: "Hotel", Status: mapping.StatusActive,
		Timezone: "Europe/Berlin", CreatedAt: time.Unix(0, 0).UTC(), UpdatedAt: time.Unix(0, 0).UTC()}), nil
}

// request is one partner request as the edge makes it: its server span
// (StartServerSpan; traceparent "" or a partner's), then, answered, the
// tail decision (Decide) and the end of its span.
type request struct {
	tel  *observability.Telemetry
	ctx  context.Context
	span trace.Span
}

func startRequest(tel *observability.Telemetry, traceparent string) *request {
	r := httptest.NewRequest("GET", "/v1/properties/x", nil)
	if traceparent != "" {
		r.Header.Set("Traceparent", traceparent)
	}
	ctx, span := tel.StartServerSpan(r)
	return &request{tel: tel, ctx: ctx, span: span}
}

// answer decides the request's trace (status sent) and ends its span.
func (q *request) answer(status int) bool {
	r := httptest.NewRequest("GET", "/v1/properties/x", nil)
	start := time.Now()
	_, kept, end := q.tel.Decide(q.ctx, r, start, status, time.Millisecond)
	end(start.Add(time.Millisecond))
	q.span.End()
	return kept
}

// linksTest is a tail-sampling Telemetry under a head sampler that keeps
// only what a partner's traceparent says, exporting to memory.
func linksTest(t *testing.T) (*observability.Telemetry, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := observability.New(context.Background(), observability.Config{SpanExporter: exp, TailSampling: true,
		Getenv: func(k string) string {
			return map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_always_off"}[k]
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel, exp
}

const sampledParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// exported finds the span id's exported span.
func exported(exp *tracetest.InMemoryExporter, sc trace.SpanContext) (tracetest.SpanStub, bool) {
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID() == sc.TraceID() && s.SpanContext.SpanID() == sc.SpanID() {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

func keptBy(s tracetest.SpanStub) string {
	for _, kv := range s.Attributes {
		if kv.Key == observability.AttrKeptBy {
			return kv.Value.AsString()
		}
	}
	return ""
}

// TestTTL0FollowersLinkToAKeptLeader (docs/contract.md section 20; no dead
// link, docs/observability.md "Walks"): with TTL 0 a request that joined
// another's PMS call links to the leader's span, and the leader, whose
// trace the sampler dropped, is kept for it (kept_by link) with its PMS
// call. A leader nobody joined is not kept.
func TestTTL0FollowersLinkToAKeptLeader(t *testing.T) {
	for _, failing := range []bool{false, true} {
		t.Run(map[bool]string{false: "ok", true: "failing"}[failing], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tel, exp := linksTest(t)
				now := testkit.From(testkit.Epoch) // the tests' day, moving with the bubble's clock
				inner := &blockingCatalog{now: now, tracer: tel.Tracer(), release: make(chan struct{})}
				if failing {
					inner.err = &upstream.Error{Kind: upstream.BadGateway, Err: errors.New("pms down")}
				}
				c := cache.New(inner, cache.Config{Now: now, TTL: 0, Key: "aurora/live", Tracer: tel.Tracer(),
					LinkRequest: tel.LinkRequest, KeepRequest: tel.KeepRequest, LeadLoad: tel.LeadLoad})
				defer c.Close()
				leader := startRequest(tel, "")
				follower := startRequest(tel, sampledParent)
				if leader.span.IsRecording() || !follower.span.IsRecording() {
					t.Fatal("want the leader sampled out, the follower in")
				}
				done := make(chan error, 2)
				go func() { _, err := c.Property(leader.ctx, "id-1"); done <- err }()
				synctest.Wait() // the leader's call has started
				go func() { _, err := c.Property(follower.ctx, "id-1"); done <- err }()
				synctest.Wait() // the follower waits on it
				close(inner.release)
				for range 2 {
					if err := <-done; (err != nil) != failing {
						t.Fatalf("Property: %v", err)
					}
				}
				status := map[bool]int{false: 200, true: 502}[failing]
				follower.answer(status)
				if !leader.answer(status) {
					t.Fatal("the leader's trace was not kept")
				}
				fol, ok := exported(exp, follower.span.SpanContext())
				if !ok || !hasLink(fol.Links, leader.span.SpanContext()) {
					t.Fatalf("the follower's span %v links to %v: want the leader %s", ok, fol.Links, leader.span.SpanContext().SpanID())
				}
				led, ok := exported(exp, leader.span.SpanContext())
				want := map[bool]string{false: "link", true: "error"}[failing]
				if !ok || keptBy(led) != want {
					t.Errorf("the leader's server span: exported %v, kept_by %q; want %s", ok, keptBy(led), want)
				}
				var call bool
				for _, s := range exp.GetSpans() {
					call = call || (s.Name == "pms.get_hotel" && s.SpanContext.TraceID() == leader.span.SpanContext().TraceID())
				}
				if !call {
					t.Error("the leader's PMS call was not exported with it")
				}
			})
		})
	}
	t.Run("nobody joined", func(t *testing.T) {
		tel, exp := linksTest(t)
		now := testkit.From(testkit.Epoch) // the tests' day, moving with the wall clock
		inner := &blockingCatalog{now: now, tracer: tel.Tracer(), release: make(chan struct{})}
		close(inner.release)
		c := cache.New(inner, cache.Config{Now: now, TTL: 0, Key: "aurora/live", Tracer: tel.Tracer(),
			LinkRequest: tel.LinkRequest, KeepRequest: tel.KeepRequest, LeadLoad: tel.LeadLoad})
		defer c.Close()
		alone := startRequest(tel, "")
		if _, err := c.Property(alone.ctx, "id-1"); err != nil {
			t.Fatal(err)
		}
		if alone.answer(200) {
			t.Errorf("a leader nobody joined was kept")
		}
		if n := len(exp.GetSpans()); n != 0 {
			t.Errorf("%d spans exported, want none", n)
		}
	})
}

// TestWalkKeepsTheRequestThatStartedIt (no dead link): the walk is kept
// whatever the sampler, and links to the request that started it; that
// request, which the sampler dropped and which answered 200 quickly, is
// kept for it (kept_by link), with its link to the walk. A head-sampled
// follower links to the walk and to that request.
func TestWalkKeepsTheRequestThatStartedIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tel, exp := linksTest(t)
		now := testkit.From(testkit.Epoch) // the tests' day, moving with the bubble's clock
		inner := &blockingCatalog{now: now, tracer: tel.Tracer(), release: make(chan struct{})}
		c := cache.New(inner, cache.Config{Now: now, TTL: time.Hour, Key: "aurora/live", Tracer: tel.Tracer(),
			LinkRequest: tel.LinkRequest, KeepRequest: tel.KeepRequest, LeadLoad: tel.LeadLoad})
		defer c.Close()
		starter := startRequest(tel, "")
		follower := startRequest(tel, sampledParent)
		done := make(chan error, 2)
		go func() { _, err := c.Snapshot(starter.ctx); done <- err }()
		synctest.Wait()
		go func() { _, err := c.Snapshot(follower.ctx); done <- err }()
		synctest.Wait()
		close(inner.release)
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		follower.answer(200)
		if !starter.answer(200) {
			t.Fatal("the request that started the walk was not kept")
		}
		var walk tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if s.Name == cache.SpanWalk {
				walk = s
			}
		}
		if !walk.SpanContext.IsValid() || !hasLink(walk.Links, starter.span.SpanContext()) {
			t.Fatalf("walk %v links %v: want the starter %s", walk.SpanContext.IsValid(), walk.Links, starter.span.SpanContext().SpanID())
		}
		st, ok := exported(exp, starter.span.SpanContext())
		if !ok || keptBy(st) != "link" || !hasLink(st.Links, walk.SpanContext) {
			t.Errorf("the starter's span: exported %v, kept_by %q, links %v; want kept_by link and a link to the walk", ok, keptBy(st), st.Links)
		}
		fol, _ := exported(exp, follower.span.SpanContext())
		if !hasLink(fol.Links, walk.SpanContext) || !hasLink(fol.Links, starter.span.SpanContext()) {
			t.Errorf("the follower links to %v: want the walk and the starter", fol.Links)
		}
	})
}

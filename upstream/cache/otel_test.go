package cache_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
	pmsclient "github.com/partner-edge/partner-edge/upstream/pms"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// observedStack is the real chain over loopback (pmsim, client, Direct,
// Cache) with the client and the cache recording into one Telemetry (real
// SDK: in-memory spans, manual metric reader).
type observedStack struct {
	*stack
	tel    *observability.Telemetry
	exp    *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
}

func newObservedStack(t *testing.T, cfg cache.Config) *observedStack {
	t.Helper()
	o := &observedStack{exp: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	var err error
	o.tel, err = observability.New(context.Background(), observability.Config{
		SpanExporter: o.exp, MetricReader: o.reader, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.tel.Shutdown(context.Background()) })
	pms, err := upstream.NewPMSMetrics(o.tel.Meter(), "live")
	if err != nil {
		t.Fatal(err)
	}
	cm, err := cache.NewMetrics(o.tel.Meter(), "live")
	if err != nil {
		t.Fatal(err)
	}

	sim := pmsim.New(pmsim.Config{Seed: 7, Brands: 1, HotelsPerBrand: 40})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	client, err := pmsclient.NewClient(pmsclient.ClientConfig{
		BaseURL:        srv.URL,
		Now:            testkit.From(cfg.Now()), // the cache's day, moving on from it: the breaker as on the wall clock
		CallTimeout:    2 * time.Second,
		AttemptTimeout: time.Second,
		Retry:          pmsclient.RetryConfig{WaitMin: time.Millisecond, WaitMax: 5 * time.Millisecond},
		Tracer:         o.tel.Tracer(),
		Metrics:        pms,
		WrapTransport:  func(rt http.RoundTripper) http.RoundTripper { return o.tel.Transport(rt, pmsclient.ResendCount) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.CloseIdleConnections)
	cfg.Key = "aurora/live"
	cfg.Metrics = cm
	// Walks traced as cache.NewPMS wires them: a walk's span ends once the
	// cache has taken its result in (walkEnded).
	cfg.Tracer, cfg.LinkRequest = o.tel.Tracer(), o.tel.LinkRequest
	cfg.KeepWalk, cfg.KeepRequest, cfg.LeadLoad = o.tel.KeepWalk, o.tel.KeepRequest, o.tel.LeadLoad
	c := cache.New(pmsclient.NewDirect(client, pmsclient.DirectOptions{Brand: "aurora", Now: cfg.Now}), cfg)
	t.Cleanup(c.Close)
	o.stack = &stack{sim: sim, client: client, cache: c}
	return o
}

// result is what one partner request left: its span.
type result struct {
	span tracetest.SpanStub
	err  error
}

// call is one partner request: a server-like span around a Snapshot. Safe
// to run in another goroutine.
func (o *observedStack) call(ctx context.Context) result {
	ctx = upstream.WithCallerIDs(ctx, upstream.CallerIDs{RequestID: "req_x"})
	ctx, span := o.tel.Tracer().Start(ctx, "edge request", trace.WithSpanKind(trace.SpanKindServer))
	_, err := o.cache.Snapshot(ctx)
	span.End()
	for _, s := range o.exp.GetSpans() {
		if s.SpanContext.SpanID() == span.SpanContext().SpanID() {
			return result{s, err}
		}
	}
	return result{tracetest.SpanStub{}, errors.New("request span not exported")}
}

// walkEnded reports whether a walk of kind has ended with outcome ("ok"
// or "failed"): its span is exported (synchronously: Config.SpanExporter)
// after the cache has stored its snapshot or backed off from its failure.
func (o *observedStack) walkEnded(kind, outcome string) bool {
	for _, s := range o.exp.GetSpans() {
		if s.Name != cache.SpanWalk {
			continue
		}
		var k, out string
		for _, kv := range s.Attributes {
			switch kv.Key {
			case cache.AttrWalkKind:
				k = kv.Value.AsString()
			case cache.AttrWalkOutcome:
				out = kv.Value.AsString()
			}
		}
		if k == kind && out == outcome {
			return true
		}
	}
	return false
}

// lookups is partner_edge.cache.lookups for pms live and outcome.
func (o *observedStack) lookups(t *testing.T, outcome string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "partner_edge.cache.lookups" {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				pms, _ := p.Attributes.Value("pms")
				out, _ := p.Attributes.Value("outcome")
				if pms.AsString() == "live" && out.AsString() == outcome {
					n += p.Value
				}
			}
		}
	}
	return n
}

// lookupEvent is the outcome of the span's cache.lookup event, "" if none
// (more than one is an error).
func lookupEvent(t *testing.T, s tracetest.SpanStub) string {
	t.Helper()
	out := ""
	for _, e := range s.Events {
		if e.Name != cache.EventCacheLookup {
			continue
		}
		if out != "" {
			t.Errorf("span has more than one cache.lookup event")
		}
		for _, kv := range e.Attributes {
			if kv.Key == cache.AttrCacheOutcome {
				out = kv.Value.AsString()
			}
		}
	}
	return out
}

func (o *observedStack) wantOutcome(t *testing.T, r result, outcome string) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("%s: %v", outcome, r.err)
	}
	if got := lookupEvent(t, r.span); got != outcome {
		t.Errorf("span cache.lookup event outcome %q, want %q", got, outcome)
	}
	var attr string
	for _, kv := range r.span.Attributes {
		if kv.Key == cache.AttrCacheOutcome {
			attr = kv.Value.AsString()
		}
	}
	if attr != outcome {
		t.Errorf("span attribute %s = %q, want %q", cache.AttrCacheOutcome, attr, outcome)
	}
}

// Miss, hit, stale and coalesced are each counted in
// partner_edge.cache.lookups, and set as an attribute and a cache.lookup
// event on the caller's span.
func TestCacheOutcomesRecorded(t *testing.T) {
	clk := testkit.NewClockAt(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	start := clk.Now()
	o := newObservedStack(t, cache.Config{TTL: time.Minute, RefreshAhead: 1, Now: clk.Now})
	ctx := context.Background()
	for _, out := range cache.LookupOutcomes {
		if n := o.lookups(t, out); n != 0 {
			t.Fatalf("%s = %d before any lookup", out, n)
		}
	}

	o.wantOutcome(t, o.call(ctx), cache.OutcomeMiss)
	o.wantOutcome(t, o.call(ctx), cache.OutcomeHit)

	// Stale: past TTL with the PMS failing: the held snapshot answers
	// (a hit) while its refresh walk fails (three attempts), then is served
	// as stale data. The wait is for the walk's end, not for its last
	// attempt at the PMS: until the cache has taken the failure in, the
	// held snapshot is still a hit.
	o.sim.SetFaults(pmsim.Faults{ErrorStatus: http.StatusBadGateway})
	clk.Set(start.Add(2 * time.Minute))
	before := o.sim.Requests()
	o.wantOutcome(t, o.call(ctx), cache.OutcomeHit)
	testkit.Eventually(t, "the refresh walk failed", func() bool { return o.walkEnded(cache.WalkRefresh, "failed") })
	if n := o.sim.Requests() - before; n != 3 {
		t.Errorf("the refresh walk made %d PMS attempts, want 3 (one page, two retries)", n)
	}
	o.wantOutcome(t, o.call(ctx), cache.OutcomeStale)

	// Coalesced: a second caller joins a load in flight (past Stale:
	// nothing left to serve, every caller waits for the load).
	clk.Set(start.Add(cache.DefaultStale + 2*time.Minute))
	o.sim.SetFaults(pmsim.Faults{Latency: 300 * time.Millisecond})
	before = o.sim.ListRequests()
	leader := make(chan result, 1)
	go func() { leader <- o.call(ctx) }()
	testkit.Eventually(t, "the leader's load reached the PMS", func() bool { return o.sim.ListRequests() > before })
	o.wantOutcome(t, o.call(ctx), cache.OutcomeCoalesced)
	o.wantOutcome(t, <-leader, cache.OutcomeMiss)

	for out, want := range map[string]int64{"hit": 2, "miss": 2, "stale": 1, "coalesced": 1} {
		if n := o.lookups(t, out); n != want {
			t.Errorf("partner_edge.cache.lookups{outcome=%q} = %d, want %d", out, n, want)
		}
	}
}

// A hit that starts a refresh-ahead is a hit on the request's span; the
// refresh is not a lookup.
func TestRefreshAttemptsNotChargedToHit(t *testing.T) {
	clk := testkit.NewClockAt(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	o := newObservedStack(t, cache.Config{TTL: time.Minute, RefreshAhead: 0.5, Now: clk.Now})
	ctx := context.Background()
	o.wantOutcome(t, o.call(ctx), cache.OutcomeMiss)
	clk.Set(clk.Now().Add(40 * time.Second)) // past RefreshAhead*TTL, within TTL
	hit := o.call(ctx)
	o.wantOutcome(t, hit, cache.OutcomeHit)
	if n := o.lookups(t, "hit"); n != 1 {
		t.Errorf("hits = %d, want 1 (a refresh is not a lookup)", n)
	}
}

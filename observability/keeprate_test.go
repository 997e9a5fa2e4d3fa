package observability

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/partner-edge/partner-edge/observability/testkit"
)

// keepRateTest is a tail-sampling Telemetry at ratio 0 keeping at most
// rate traces a second by outcome, on clock.
func keepRateTest(t *testing.T, rate int, clock *testkit.Clock) (*Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), Config{Getenv: env(map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}),
		SpanExporter: exp, TailSampling: true, KeepSlowerThan: time.Second, KeepRate: rate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	tel.tail.budget = newKeepBudget(rate, clock.Now)
	return tel, exp
}

// answer is one request with a PMS call beneath it, answered status after
// elapsed; it reports whether its trace was kept.
func answer(tel *Telemetry, status int, elapsed time.Duration) bool {
	r := httptest.NewRequest("GET", "/v1/properties/x", nil)
	ctx, span := tel.StartServerSpan(r)
	_, child := tel.Tracer().Start(ctx, "pms.get_hotel")
	child.End()
	start := time.Now()
	_, kept, end := tel.Decide(ctx, r, start, status, elapsed)
	end(start.Add(elapsed))
	span.End()
	return kept
}

// TestKeepRateSummarisesAStorm (docs/contract.md section 22): a storm of
// 5xx answers, a hundred a second for ten seconds at EDGE_TRACE_KEEP_RATE
// 10, keeps at most 10 a second and 10 at once (110), each whole, and
// counts the others in partner_edge_traces_unkept_total{reason="error"};
// the kept ones are spread over the storm.
func TestKeepRateSummarisesAStorm(t *testing.T) {
	clock := testkit.NewClock()
	tel, exp := keepRateTest(t, 10, clock)
	kept, perSecond := 0, map[int]int{}
	for i := range 1000 {
		if answer(tel, 502, time.Millisecond) {
			kept++
			perSecond[i/100]++
		}
		clock.Advance(10 * time.Millisecond)
	}
	if kept > 110 || kept < 100 {
		t.Errorf("%d of 1000 traces kept in 10 s at 10 a second, want 100 to 110", kept)
	}
	for s := range 10 {
		if perSecond[s] == 0 || perSecond[s] > 20 {
			t.Errorf("second %d kept %d traces, want some, at most 20: %v", s, perSecond[s], perSecond)
		}
	}
	servers, calls := 0, 0
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "GET":
			servers++
		case "pms.get_hotel":
			calls++
		}
	}
	if servers != kept || calls != kept {
		t.Errorf("%d server spans, %d PMS calls exported for %d kept traces: want each whole", servers, calls, kept)
	}
	fams := testkit.Scrape(t, tel.MetricsHandler())
	if got := counter(t, fams, "partner_edge_traces_unkept_total", map[string]string{"reason": "error"}); got != float64(1000-kept) {
		t.Errorf("unkept errors %v, want %d", got, 1000-kept)
	}
	if got := counter(t, fams, "partner_edge_traces_unkept_total", map[string]string{"reason": "slow"}); got != 0 {
		t.Errorf("unkept slow %v, want 0", got)
	}
}

// TestKeepRateErrorsFirst: slow requests leave half the burst to errors;
// errors may take all of it; without a bound (rate 0) every one is kept.
func TestKeepRateErrorsFirst(t *testing.T) {
	clock := testkit.NewClock()
	tel, _ := keepRateTest(t, 10, clock)
	count := func(n, status int, elapsed time.Duration) (kept int) {
		for range n {
			if answer(tel, status, elapsed) {
				kept++
			}
		}
		return kept
	}
	if got := count(20, 200, 2*time.Second); got != 5 {
		t.Errorf("slow requests kept %d of a burst of 10, want 5 (half left to errors)", got)
	}
	if got := count(20, 503, time.Millisecond); got != 5 {
		t.Errorf("errors kept %d after the slow ones, want the 5 left", got)
	}
	clock.Advance(time.Second)
	if got := count(20, 503, time.Millisecond); got != 10 {
		t.Errorf("errors kept %d of a full burst, want 10", got)
	}
	fams := testkit.Scrape(t, tel.MetricsHandler())
	if got := counter(t, fams, "partner_edge_traces_unkept_total", map[string]string{"reason": "slow"}); got != 15 {
		t.Errorf("unkept slow %v, want 15", got)
	}

	unbounded, _ := keepRateTest(t, 0, clock)
	for range 500 {
		if !answer(unbounded, 500, time.Millisecond) {
			t.Fatal("with no keep rate a 5xx was not kept")
		}
	}
}

// A mark (KeepRequest, LeadLoad) keeps a trace whatever its outcome; the
// budget is the link claims' too, and a claim nobody needed gives its
// token back.
func TestKeepRateMarksAndClaims(t *testing.T) {
	clock := testkit.NewClock()
	tel, _ := keepRateTest(t, 2, clock)
	r := httptest.NewRequest("GET", "/v1/properties", nil)
	start := time.Now()

	// A marked request is kept at no cost, with kept_by link.
	ctx, span := tel.StartServerSpan(r)
	if !tel.KeepRequest(ctx) {
		t.Fatal("KeepRequest of an undecided request: false")
	}
	_, kept, end := tel.Decide(ctx, r, start, 200, time.Millisecond)
	end(start)
	span.End()
	if !kept || tel.KeepRequest(context.Background()) {
		t.Errorf("marked request kept %v; KeepRequest without a span must say false", kept)
	}

	// Claims take from the budget at the rank of a slow request (rate 2:
	// one is left to errors), and a claim given back is there again.
	claim := func() (Lead, func(int) bool) {
		r := httptest.NewRequest("GET", "/v1/properties/x", nil)
		ctx, span := tel.StartServerSpan(r)
		_, child := tel.Tracer().Start(ctx, "pms.get_hotel")
		child.End()
		return tel.LeadLoad(ctx), func(status int) bool {
			_, kept, end := tel.Decide(ctx, r, start, status, time.Millisecond)
			end(start)
			span.End()
			return kept
		}
	}
	first, answerFirst := claim()
	if _, ok := first.Link(); !ok {
		t.Fatal("the first claim is not linkable")
	}
	second, answerSecond := claim()
	if _, ok := second.Link(); ok {
		t.Error("a second claim took the token left to errors")
	}
	first.Settle(false) // nobody joined: the token goes back
	if answerFirst(200) {
		t.Error("a leader nobody joined was kept")
	}
	answerSecond(200)
	third, answerThird := claim()
	if _, ok := third.Link(); !ok {
		t.Fatal("the token given back was not there for the next claim")
	}
	third.Settle(true)
	if !answerThird(200) {
		t.Error("a joined leader with a claim was not kept")
	}
}

// exporterFunc is a SpanExporter of one function.
type exporterFunc func(context.Context, []sdktrace.ReadOnlySpan) error

func (f exporterFunc) ExportSpans(ctx context.Context, s []sdktrace.ReadOnlySpan) error {
	return f(ctx, s)
}
func (exporterFunc) Shutdown(context.Context) error { return nil }

// TestSpansDroppedAreCounted (docs/contract.md section 22): the spans of a
// failed export, and those the export queue had no room for, are counted
// in partner_edge_spans_dropped_total by reason; the others reach the
// exporter.
func TestSpansDroppedAreCounted(t *testing.T) {
	loss, err := newLoss(mustTelemetry(t).Meter())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	release := make(chan struct{})
	exported, failed := 0, 0
	exp := exporterFunc(func(_ context.Context, s []sdktrace.ReadOnlySpan) error {
		<-release // the collector hangs, then refuses
		mu.Lock()
		defer mu.Unlock()
		if failed == 0 {
			failed = len(s)
			return errors.New("collector away")
		}
		exported += len(s)
		return nil
	})
	proc, err := newCountingBatcher(exp, env(map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "4"}), loss)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(proc))
	// The exporter hangs: at most 4 spans wait in the queue and 4 more in
	// the export that hangs, so of 10 at least 2 find no room.
	for range 10 {
		_, s := tp.Tracer("t").Start(context.Background(), "s")
		s.End() // never blocks
	}
	close(release)
	_ = tp.Shutdown(context.Background()) // flushes; the first export's error is counted, not returned here
	mu.Lock()
	defer mu.Unlock()
	queueFull, exportFailed := loss.dropped.slots[droppedQueueFull].n.Load(), loss.dropped.slots[droppedExportFailed].n.Load()
	if queueFull < 2 || exportFailed != int64(failed) || failed == 0 || int64(exported+failed)+queueFull != 10 {
		t.Errorf("queue_full %d, export_failed %d (failed export of %d), exported %d: want at least 2 dropped at the queue, the failed export's spans counted, every span accounted for",
			queueFull, exportFailed, failed, exported)
	}
}

func mustTelemetry(t *testing.T) *Telemetry {
	tel, _, _ := newTest(t, nil)
	return tel
}

// TestKeepWalkWithinTheBudget: a walk takes a token, and one more for the
// request it links to when the head sampler dropped that request; beyond
// the budget it is left out whole (nothing recorded, nothing held) and
// counted.
func TestKeepWalkWithinTheBudget(t *testing.T) {
	clock := testkit.NewClock()
	tel, exp := keepRateTest(t, 3, clock)
	r := httptest.NewRequest("GET", "/v1/properties", nil)
	ctx, span := tel.StartServerSpan(r)
	defer span.End()
	walk := func() bool {
		wctx, kept := tel.KeepWalk(ctx)
		wctx, root := tel.Tracer().Start(wctx, "pms.walk", trace.WithNewRoot())
		_, page := tel.Tracer().Start(wctx, "pms.list_hotels")
		page.End()
		root.End()
		if root.SpanContext().IsSampled() != kept || page.SpanContext().IsSampled() != kept {
			t.Errorf("walk kept %v: its root sampled %v, its page %v", kept, root.SpanContext().IsSampled(), page.SpanContext().IsSampled())
		}
		return kept
	}
	if !walk() {
		t.Fatal("the first walk (2 of 3 tokens) was left out")
	}
	if walk() {
		t.Error("a walk and its request took 2 tokens of the 1 left")
	}
	if n := len(exp.GetSpans()); n != 2 {
		t.Errorf("%d spans exported, want the kept walk's 2", n)
	}
	if n := tel.tail.n.Load(); n != 0 {
		t.Errorf("%d traces held after the walk left out, want none", n)
	}
	fams := testkit.Scrape(t, tel.MetricsHandler())
	if got := counter(t, fams, "partner_edge_traces_unkept_total", map[string]string{"reason": "walk"}); got != 1 {
		t.Errorf("unkept walks %v, want 1", got)
	}
}

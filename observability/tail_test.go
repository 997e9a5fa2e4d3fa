package observability

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func newTail(t *testing.T, vars map[string]string, slow time.Duration) (*Telemetry, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), Config{Getenv: env(vars), SpanExporter: exp, TailSampling: true, KeepSlowerThan: slow})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel, exp
}

// TestTailKeepsErrorsAndSlowRequests: at ratio 0 a 5xx or slow request's
// whole trace is exported (the server span with the ids its first,
// non-recording self had, and the spans beneath it, even one that ends
// after the decision); a 200 exports nothing; a trace the head kept is
// kept whatever its outcome.
func TestTailKeepsErrorsAndSlowRequests(t *testing.T) {
	ratio0 := map[string]string{"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}
	cases := []struct {
		name      string
		vars      map[string]string
		header    string
		status    int
		elapsed   time.Duration
		wantKept  bool
		wantSpans int
		keptBy    string
	}{
		{"200 at ratio 0", ratio0, "", 200, time.Millisecond, false, 0, ""},
		{"404 at ratio 0", ratio0, "", 404, time.Millisecond, false, 0, ""},
		{"502 at ratio 0", ratio0, "", 502, time.Millisecond, true, 3, "error"},
		{"slow at ratio 0", ratio0, "", 200, 2 * time.Second, true, 3, "slow"},
		{"502, partner said not sampled", ratio0, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", 502, 0, true, 3, "error"},
		{"200, partner said sampled", ratio0, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", 200, 0, true, 3, ""},
		{"200 at ratio 1", nil, "", 200, 0, true, 3, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tel, exp := newTail(t, tc.vars, time.Second)
			r := httptest.NewRequest("GET", "/v1/properties", nil)
			if tc.header != "" {
				r.Header.Set("Traceparent", tc.header)
			}
			ctx, span := tel.StartServerSpan(r)
			first := span.SpanContext()
			cctx, child := tel.Tracer().Start(ctx, "pms.get_hotel")
			if !child.SpanContext().IsSampled() {
				t.Fatal("a span under the request is not sampled: the PMS would not record its part")
			}
			_, grandchild := tel.Tracer().Start(cctx, "GET")
			grandchild.End()
			sctx, kept, end := tel.Decide(ctx, r, time.Now().Add(-tc.elapsed), tc.status, tc.elapsed)
			child.End() // after the decision: it follows it
			end(time.Now())
			span.End()
			if kept != tc.wantKept {
				t.Errorf("kept = %v, want %v", kept, tc.wantKept)
			}
			spans := exp.GetSpans()
			if len(spans) != tc.wantSpans {
				t.Fatalf("%d spans exported, want %d: %v", len(spans), tc.wantSpans, spans.Snapshots())
			}
			if !kept {
				return
			}
			if got := trace.SpanContextFromContext(sctx); got.SpanID() != first.SpanID() || got.TraceID() != first.TraceID() {
				t.Errorf("server span %v, want the ids %v", got, first)
			}
			var server *tracetest.SpanStub
			for i := range spans {
				if spans[i].SpanKind == trace.SpanKindServer {
					server = &spans[i]
				}
				if spans[i].SpanContext.TraceID() != first.TraceID() {
					t.Errorf("span %s in trace %s, want %s", spans[i].Name, spans[i].SpanContext.TraceID(), first.TraceID())
				}
			}
			if server == nil {
				t.Fatal("no server span exported")
			}
			if server.SpanContext.SpanID() != first.SpanID() {
				t.Errorf("server span id %s, want %s (the one the PMS and the logs saw)", server.SpanContext.SpanID(), first.SpanID())
			}
			if tc.header != "" && server.Parent.SpanID().String() != "00f067aa0ba902b7" {
				t.Errorf("server span's parent %s, want the partner's", server.Parent.SpanID())
			}
			var by string
			for _, kv := range server.Attributes {
				if kv.Key == AttrKeptBy {
					by = kv.Value.AsString()
				}
			}
			if by != tc.keptBy {
				t.Errorf("%s = %q, want %q", AttrKeptBy, by, tc.keptBy)
			}
		})
	}
}

// TestTailSlowOff: KeepSlowerThan 0 keeps no request for its time.
func TestTailSlowOff(t *testing.T) {
	tel, exp := newTail(t, map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}, 0)
	r := httptest.NewRequest("GET", "/v1/properties", nil)
	ctx, span := tel.StartServerSpan(r)
	_, kept, end := tel.Decide(ctx, r, time.Now(), 200, time.Hour)
	end(time.Now())
	span.End()
	if kept || len(exp.GetSpans()) != 0 {
		t.Errorf("kept %v, %d spans: want nothing", kept, len(exp.GetSpans()))
	}
}

// TestTailKeepsLinksOfDroppedRequests: a request the head sampler dropped
// that linked to a walk (LinkRequest) and then failed is kept with the
// link; one that succeeded leaves nothing behind.
func TestTailKeepsLinksOfDroppedRequests(t *testing.T) {
	tel, exp := newTail(t, map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}, time.Second)
	_, walk := tel.Tracer().Start(KeepTrace(context.Background()), "pms.walk")
	walk.End()
	for _, status := range []int{200, 502} {
		r := httptest.NewRequest("GET", "/v1/properties", nil)
		ctx, span := tel.StartServerSpan(r)
		tel.LinkRequest(ctx, trace.Link{SpanContext: walk.SpanContext()})
		_, kept, end := tel.Decide(ctx, r, time.Now(), status, time.Millisecond)
		end(time.Now())
		span.End()
		if kept != (status == 502) {
			t.Errorf("%d: kept %v", status, kept)
		}
	}
	var server []tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.SpanKind == trace.SpanKindServer {
			server = append(server, s)
		}
	}
	if len(server) != 1 || len(server[0].Links) != 1 || server[0].Links[0].SpanContext.SpanID() != walk.SpanContext().SpanID() {
		t.Fatalf("server spans %v: want the 502's, linked to the walk", server)
	}
	if n := tel.tail.n.Load(); n != 0 {
		t.Errorf("%d traces still held", n)
	}
}

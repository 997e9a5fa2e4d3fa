package fleet

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/partner-edge/partner-edge/upstream/fleet/redistest"
)

func newTestClient(t *testing.T, url string, tl *tel, log *logBuf) *Client {
	t.Helper()
	cfg := Config{URL: url, Guard: GuardConfig{CallTimeout: 500 * time.Millisecond, OpenTimeout: 50 * time.Millisecond}}
	if tl != nil {
		cfg.Meter, cfg.Tracer = tl.meter, tl.tp
	}
	if log != nil {
		cfg.Log = log.logger()
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestRedisLimiterIsSharedByInstances(t *testing.T) {
	srv := redistest.Start(t)
	a := NewRedisLimiter(newTestClient(t, srv.URL(), nil, nil))
	b := NewRedisLimiter(newTestClient(t, srv.URL(), nil, nil))
	key, l := RateKey("acme", "key-1"), Limit{PerSecond: 1, Burst: 5}
	ctx := t.Context()

	if d, err := a.Peek(ctx, key, l); err != nil || !d.Allowed || d.Remaining != 5 {
		t.Fatalf("peek of a fresh key: %+v, %v", d, err)
	}
	allowed := 0
	for i := range 10 {
		lim := a
		if i%2 == 1 {
			lim = b
		}
		d, err := lim.Allow(ctx, key, l)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			allowed++
		} else if d.RetryAfter <= 0 || d.RetryAfter > time.Second {
			t.Fatalf("denied with RetryAfter %v, want (0, 1s]", d.RetryAfter)
		}
	}
	if allowed != 5 {
		t.Fatalf("two instances allowed %d of 10 at burst 5, want 5 in all", allowed)
	}
	d, err := b.Peek(ctx, key, l)
	if err != nil || d.Allowed || d.RetryAfter <= 0 || d.RetryAfter > time.Second {
		t.Fatalf("peek of a spent key: %+v, %v; want not allowed, RetryAfter in (0, 1s]", d, err)
	}
	if d2, _ := b.Peek(ctx, key, l); d2.Allowed {
		t.Fatal("peek consumed or refilled")
	}
	if _, err := a.Allow(ctx, key, Limit{}); !errors.Is(err, ErrBadLimit) {
		t.Fatalf("zero limit: %v, want ErrBadLimit", err)
	}
}

// countingLimiter is an in-process stand-in that allows everything.
type countingLimiter struct{ calls atomic.Int64 }

func (c *countingLimiter) Allow(context.Context, string, Limit) (Decision, error) {
	c.calls.Add(1)
	return Decision{Allowed: true, Remaining: 1}, nil
}

func (c *countingLimiter) Peek(ctx context.Context, k string, l Limit) (Decision, error) {
	return c.Allow(ctx, k, l)
}

func TestFallbackLimiterSurvivesRedisRestart(t *testing.T) {
	srv := redistest.Start(t)
	tl, log := newTel(t), &logBuf{}
	c := newTestClient(t, srv.URL(), tl, log)
	local := &countingLimiter{}
	f := &FallbackLimiter{Shared: NewRedisLimiter(c), Local: local, Use: UseRateLimit, Count: c}
	key, l := RateKey("acme", "k"), Limit{PerSecond: 100, Burst: 100}
	ctx := t.Context()

	if _, err := f.Allow(ctx, key, l); err != nil || local.calls.Load() != 0 {
		t.Fatalf("shared: err %v, local calls %d", err, local.calls.Load())
	}
	srv.Stop()
	for i := range 10 {
		if d, err := f.Allow(ctx, key, l); err != nil || !d.Allowed {
			t.Fatalf("call %d with Redis down: %+v, %v; want the local answer", i, d, err)
		}
	}
	if local.calls.Load() != 10 {
		t.Fatalf("local calls %d, want 10", local.calls.Load())
	}
	if got := tl.counter(t, "partner_edge.redis.fallbacks", "use", "rate_limit"); got != 10 {
		t.Fatalf("fallbacks %d, want 10", got)
	}
	if c.State() != 2 {
		t.Fatalf("breaker %v with Redis down, want open", c.State())
	}

	srv.Restart()
	deadline := time.Now().Add(10 * time.Second)
	for local.calls.Load() > 0 {
		before := local.calls.Load()
		if _, err := f.Allow(ctx, key, l); err != nil {
			t.Fatal(err)
		}
		if local.calls.Load() == before {
			break // answered by Redis again
		}
		if time.Now().After(deadline) {
			t.Fatal("still falling back 10 s after Redis returned")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c.State() != 0 {
		t.Fatalf("breaker %v after Redis returned, want closed", c.State())
	}
	if n := log.lines("to=open"); n != 1 {
		t.Fatalf("%d opening lines, want 1", n)
	}
}

func TestClientSpansFollowSemconv(t *testing.T) {
	srv := redistest.Start(t)
	tl := newTel(t)
	c := newTestClient(t, srv.URL(), tl, nil)
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	var ping *tracetest.SpanStub
	for i, s := range tl.spans.GetSpans() {
		if s.Name == "PING" {
			ping = &tl.spans.GetSpans()[i]
		}
	}
	if ping == nil {
		t.Fatal("no PING span")
	}
	want := map[string]string{"db.system.name": "redis", "db.operation.name": "PING", "server.address": "127.0.0.1", "db.namespace": "0"}
	got := map[string]string{}
	for _, a := range ping.Attributes {
		got[string(a.Key)] = a.Value.String()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %s=%q, want %q", k, got[k], v)
		}
	}
	if got["server.port"] != srv.Addr()[len("127.0.0.1:"):] {
		t.Errorf("server.port %q, want the server's", got["server.port"])
	}
	found := false
	for _, p := range tl.histogram(t, "db.client.operation.duration") {
		if v, _ := p.Attributes.Value("db.operation.name"); v.AsString() == "PING" && p.Count == 1 {
			found = true
		}
	}
	if !found {
		t.Fatal("no db.client.operation.duration point for PING")
	}
}

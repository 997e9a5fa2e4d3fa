package redisconn

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

func newTestClient(t *testing.T, url string, tl *testkit.Telemetry, log *testkit.LogBuffer) *Client {
	t.Helper()
	cfg := Config{URL: url, Guard: GuardConfig{CallTimeout: 500 * time.Millisecond, OpenTimeout: 50 * time.Millisecond}}
	if tl != nil {
		cfg.Meter, cfg.Tracer = tl.Meter, tl.TracerProvider
	}
	if log != nil {
		cfg.Log = log.Logger()
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// watchClient runs c's health probe every every, as the edge does
// (cmd/edge serve.go), until the test ends: it alone finds Redis back once
// the breaker has opened (Guard.Do never runs the half-open trial).
func watchClient(t *testing.T, c *Client, every time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Watch(ctx, every) }()
	t.Cleanup(func() { cancel(); <-done })
}

// A user of the client (the edge's redislimit.Limiter) counts a fallback on
// each error and decides in-process; the client must err at once while
// Redis is down and answer again once it is back.
func TestClientSurvivesRedisRestart(t *testing.T) {
	srv := redistest.Start(t)
	tl, log := testkit.NewTelemetry(t), &testkit.LogBuffer{}
	c := newTestClient(t, srv.URL(), tl, log)
	ctx := t.Context()
	fromRedis := func() bool {
		err := c.Do(ctx, func(ctx context.Context, rdb redis.UniversalClient) error {
			return rdb.Incr(ctx, "pe:test:calls").Err()
		})
		if err != nil {
			c.Fallback(ctx, UseRateLimit, err)
			return false
		}
		return true
	}

	if !fromRedis() {
		t.Fatal("Redis up: no answer from Redis")
	}
	srv.Stop()
	for i := range 10 {
		if fromRedis() {
			t.Fatalf("call %d with Redis down answered by Redis", i)
		}
	}
	if got := tl.Counter(t, "partner_edge.redis.fallbacks", "use", "rate_limit"); got != 10 {
		t.Fatalf("fallbacks %d, want 10", got)
	}
	if c.State() != 2 {
		t.Fatalf("breaker %v with Redis down, want open", c.State())
	}

	srv.Restart()
	watchClient(t, c, 50*time.Millisecond)
	// The outside event: the restarted Redis accepting connections again
	// (the guard's 50 ms open timeout is short beside it), which the
	// client's watch finds.
	testkit.Eventually(t, "the client answers from Redis again", fromRedis)
	if c.State() != 0 {
		t.Fatalf("breaker %v after Redis returned, want closed", c.State())
	}
	if n := log.Count("to=open"); n != 1 {
		t.Fatalf("%d opening lines, want 1", n)
	}
}

func TestClientSpansFollowSemconv(t *testing.T) {
	srv := redistest.Start(t)
	tl := testkit.NewTelemetry(t)
	c := newTestClient(t, srv.URL(), tl, nil)
	if err := c.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	var ping *tracetest.SpanStub
	for i, s := range tl.Spans.GetSpans() {
		if s.Name == "PING" {
			ping = &tl.Spans.GetSpans()[i]
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
	for _, p := range tl.Histogram(t, "db.client.operation.duration") {
		if v, _ := p.Attributes.Value("db.operation.name"); v.AsString() == "PING" && p.Count == 1 {
			found = true
		}
	}
	if !found {
		t.Fatal("no db.client.operation.duration point for PING")
	}
}

// docs/operations.md, "What to watch": a member says when it joins the fleet. A
// Redis unreachable at start is a warning; once it answers the health
// probe, one line says the member joined, and only one; a Redis that
// answers again after an outage says so.
func TestClientSaysWhenItJoinsTheFleet(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	log := &testkit.LogBuffer{}
	c := newTestClient(t, srv.URL(), nil, log)
	c.Announce(t.Context(), "redis://test", log.Logger())
	if log.Count("redis unreachable at start") != 1 || log.Count("joined the fleet") != 0 {
		t.Fatalf("Redis down at start:\n%s", log.String())
	}
	srv.Restart()
	watchClient(t, c, 50*time.Millisecond)
	testkit.Eventually(t, "the member says it joined", func() bool { return log.Count("redis answers: joined the fleet") == 1 })
	// Further probes succeed and say nothing more.
	testkit.Eventually(t, "the breaker is closed", func() bool { return c.State() == 0 })
	if n := log.Count("joined the fleet"); n != 1 {
		t.Errorf("%d join lines, want 1:\n%s", n, log.String())
	}

	srv.Stop()
	testkit.Eventually(t, "the breaker opens with Redis down", func() bool { return c.State() == 2 })
	srv.Restart()
	testkit.Eventually(t, "the member says Redis answers again", func() bool { return log.Count("redis answers again") == 1 })
}

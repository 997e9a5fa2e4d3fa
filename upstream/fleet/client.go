package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// DefaultPoolSize is the connection pool size of Config.
const DefaultPoolSize = 8

// Config configures a Client.
type Config struct {
	// URL is redis://[user:password@]host:port/db or rediss:// (TLS), as in
	// EDGE_REDIS_URL. It is never logged or echoed in errors.
	URL string
	// Guard sets the per-call deadline and the breaker.
	Guard GuardConfig
	// PoolSize is the number of connections kept. Zero means
	// DefaultPoolSize (8): a call is one short round trip.
	PoolSize int
	// Log gets breaker transitions. Nil discards.
	Log *slog.Logger
	// Meter creates the instruments (see Metrics). Nil records nothing.
	Meter metric.Meter
	// Tracer gets one client span per Redis command. Nil records nothing.
	Tracer trace.TracerProvider
}

// Client is a Redis client whose every call is guarded: a short deadline,
// no retries, a circuit breaker; spans and metrics per command. Safe for
// concurrent use. Close it when done.
type Client struct {
	rdb     *redis.Client
	guard   *Guard
	metrics *Metrics
}

// New parses cfg.URL and returns a client. It does not connect: the first
// call does (and fails fast if Redis is down).
func New(cfg Config) (*Client, error) {
	opts, err := redis.ParseURL(cfg.URL)
	if err != nil {
		return nil, errors.New("fleet: the Redis URL is not a valid redis:// or rediss:// address")
	}
	g, err := cfg.Guard.withDefaults()
	if err != nil {
		return nil, err
	}
	host, portStr, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("fleet: the Redis URL has no host:port")
	}
	port, _ := strconv.Atoi(portStr)
	m, err := NewMetrics(cfg.Meter, host, port)
	if err != nil {
		return nil, err
	}
	guard, err := NewGuard(g, cfg.Log, m)
	if err != nil {
		return nil, err
	}
	if cfg.PoolSize <= 0 {
		cfg.PoolSize = DefaultPoolSize
	}
	opts.PoolSize = cfg.PoolSize
	opts.MaxRetries = -1 // the breaker and the caller's fallback are the retry
	opts.DialTimeout = g.CallTimeout
	opts.DialerRetries = 1
	opts.ReadTimeout = g.CallTimeout
	opts.WriteTimeout = g.CallTimeout
	opts.PoolTimeout = g.CallTimeout
	opts.ContextTimeoutEnabled = true // honour the per-call deadline
	opts.Protocol = 2                 // no HELLO round trip; works on every Redis and Valkey
	opts.DisableIdentity = true       // no CLIENT SETINFO on connect
	opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	rdb := redis.NewClient(opts)
	tp := cfg.Tracer
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	rdb.AddHook(newOTelHook(tp.Tracer(observability.ScopeName), m, host, port, opts.DB))
	guard.setProbe(func(ctx context.Context) error { return rdb.Set(ctx, probeKey, "1", time.Second).Err() })
	return &Client{rdb: rdb, guard: guard, metrics: m}, nil
}

// Do runs fn on the Redis client through the guard (see Guard.Do): fn must
// use the ctx it is given.
func (c *Client) Do(ctx context.Context, fn func(ctx context.Context, rdb *redis.Client) error) error {
	return c.guard.Do(ctx, func(ctx context.Context) error { return fn(ctx, c.rdb) })
}

// Ping checks Redis through the guard.
func (c *Client) Ping(ctx context.Context) error {
	return c.Do(ctx, func(ctx context.Context, rdb *redis.Client) error { return rdb.Ping(ctx).Err() })
}

// State is the breaker's state now (for the admin listener).
func (c *Client) State() upstream.BreakerState { return c.guard.State() }

// Fallback counts one answer given in-process for use because of err.
func (c *Client) Fallback(ctx context.Context, use Use, _ error) { c.metrics.Fallback(ctx, use) }

// Close closes the connections.
func (c *Client) Close() error { return c.rdb.Close() }

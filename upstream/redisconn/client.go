package redisconn

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
)

// poolSize is the connection pool size (per node): a call is one short
// round trip.
const poolSize = 8

// clusterReload is how often a Cluster client re-reads the slot map
// besides on MOVED and errors: a failed-over primary or a moved slot is
// followed within docs/contract.md section 16's 10 s even when no call has failed.
const clusterReload = 5 * time.Second

// Config configures a Client: exactly one form (Settings.Config builds
// it from the EDGE_REDIS_* settings and checks that).
type Config struct {
	URL                      string               // one primary, as EDGE_REDIS_URL; never logged or echoed in errors
	Sentinels                []string             // host:port of the Sentinels of the primary named Master
	Master, SentinelPassword string               // SentinelPassword: the Sentinels' own; empty: none
	Cluster                  []string             // host:port seeds of a Redis Cluster
	Username, Password       string               // ACL credentials (empty: the default user); a URL's own come first
	TLS                      bool                 // TLS for the Sentinel and Cluster forms (a URL says rediss://)
	TLSConfig                *tls.Config          // when TLS is on (LoadTLS); nil: the system store, no client certificate
	Guard                    GuardConfig          // the per-call deadline and the breaker
	Log                      *slog.Logger         // breaker transitions; nil discards
	Meter                    metric.Meter         // the instruments (Metrics); nil records nothing
	Tracer                   trace.TracerProvider // one client span per command; nil records nothing
}

// Client is a go-redis client of any form whose every call is guarded: a
// short deadline, no retries, a circuit breaker; spans and metrics per
// command. Safe for concurrent use. Close it when done.
type Client struct {
	rdb     redis.UniversalClient
	form    Form
	master  string // the Sentinel form's master name
	guard   *Guard
	metrics *Metrics
	timeout time.Duration
	node    atomic.Pointer[string] // primary and Sentinel forms: the address last connected to
	log     *slog.Logger           // the join line (joinedNow); never nil
	joined  atomic.Bool            // Redis has answered once: this member is in the fleet
}

// New returns a client of cfg's form. It does not connect: the first call
// does (and fails fast if Redis is down).
func New(cfg Config) (*Client, error) {
	g, err := cfg.Guard.withDefaults()
	if err != nil {
		return nil, err
	}
	var tlsOn *tls.Config // the Sentinel and Cluster forms
	if cfg.TLS {
		tlsOn = cmp.Or(cfg.TLSConfig, &tls.Config{MinVersion: tls.VersionTLS12}).Clone()
	}
	// Each call's deadline is its context's (ContextTimeoutEnabled: the
	// guard's call or bulk timeout); the sockets' own read and write
	// timeouts, which go-redis applies beside it, are the longer bulk one.
	t, bt := g.CallTimeout, g.BulkTimeout
	c := &Client{timeout: t, master: cfg.Master, log: cmp.Or(cfg.Log, slog.New(slog.DiscardHandler))}
	var (
		rdb  redis.UniversalClient
		addr string // server.address and server.port of the instruments
		db   int
	)
	switch {
	case cfg.URL != "":
		c.form = FormPrimary
		if err := CheckURL(cfg.URL); err != nil {
			return nil, errors.New("fleet: the Redis URL is not a valid redis:// or rediss:// address of one host")
		}
		opts, _ := redis.ParseURL(cfg.URL)
		if opts.Username == "" && opts.Password == "" {
			opts.Username, opts.Password = cfg.Username, cfg.Password
		}
		if opts.TLSConfig != nil && cfg.TLSConfig != nil { // rediss://: go-redis set ServerName
			opts.TLSConfig.RootCAs = cfg.TLSConfig.RootCAs
			opts.TLSConfig.Certificates = cfg.TLSConfig.Certificates
		}
		opts.PoolSize, opts.MaxRetries, opts.DialerRetries = poolSize, -1, 1 // the breaker and the caller's fallback are the retry
		opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = t, bt, bt, t
		opts.ContextTimeoutEnabled = true             // honour the per-call deadline
		opts.Protocol, opts.DisableIdentity = 2, true // no HELLO round trip, no CLIENT SETINFO: works on every Redis and Valkey
		opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		rdb, addr, db = redis.NewClient(opts), opts.Addr, opts.DB
	case len(cfg.Sentinels) > 0:
		c.form = FormSentinel
		if cfg.Master == "" {
			return nil, errors.New("fleet: a Sentinel form needs the master name")
		}
		rdb = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: cfg.Master, SentinelAddrs: cfg.Sentinels, SentinelPassword: cfg.SentinelPassword,
			Username: cfg.Username, Password: cfg.Password, TLSConfig: tlsOn,
			PoolSize: poolSize, MaxRetries: -1,
			// Each dial asks a Sentinel for the primary first: after a
			// promotion, the first dial reaches the new one.
			DialTimeout: t, DialerRetries: 1, ReadTimeout: bt, WriteTimeout: bt, PoolTimeout: t, ContextTimeoutEnabled: true,
			Protocol: 2, DisableIdentity: true,
		})
		addr = cfg.Sentinels[0]
	case len(cfg.Cluster) > 0:
		c.form = FormCluster
		rdb = redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: cfg.Cluster, Username: cfg.Username, Password: cfg.Password, TLSConfig: tlsOn,
			PoolSize: poolSize, MaxRetries: -1, // MOVED and ASK are still followed (MaxRedirects)
			DialTimeout: t, DialerRetries: 1, ReadTimeout: bt, WriteTimeout: bt, PoolTimeout: t, ContextTimeoutEnabled: true,
			Protocol: 2, DisableIdentity: true, ClusterStateReloadInterval: clusterReload,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
		})
		addr = cfg.Cluster[0]
	default:
		return nil, errors.New("fleet: no Redis named (URL, Sentinels with Master, or Cluster)")
	}
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("fleet: the Redis address has no host:port")
	}
	port, _ := strconv.Atoi(portStr)
	m, err := NewMetrics(cfg.Meter, host, port)
	if err == nil {
		c.guard, err = NewGuard(g, cfg.Log, m)
	}
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	tp := cmp.Or[trace.TracerProvider](cfg.Tracer, noop.NewTracerProvider())
	h := &otelHook{tracer: tp.Tracer(observability.ScopeName), metrics: m,
		base: append(serverAttrs(host, port), semconv.DBNamespace(strconv.Itoa(db)))}
	if c.form != FormCluster { // the Cluster's nodes are read from its slot map (Nodes)
		h.node = &c.node
	}
	rdb.AddHook(h)
	c.rdb, c.metrics = rdb, m
	c.guard.setProbe(c.probeWrite)
	return c, nil
}

// joinedNow marks that Redis answered and, the first time, says that this
// member joined the fleet (docs/operations.md, "What to watch"): at start-up
// (Announce), or later, when a Redis unreachable at start first answers
// the health probe (Watch).
func (c *Client) joinedNow(ctx context.Context, where string) {
	if !c.joined.CompareAndSwap(false, true) {
		return
	}
	attrs := []any{"nodes", c.Nodes(ctx)}
	if where != "" {
		attrs = append(attrs, "redis", where)
	}
	c.log.Info("redis answers: joined the fleet; limits and snapshot loads shared", attrs...)
}

// probeWrite is the small write of the fence's probe and of Watch.
func (c *Client) probeWrite(ctx context.Context) error {
	return c.rdb.Set(ctx, probeKey, "1", time.Second).Err()
}

// Do runs fn on the Redis client through the guard (see Guard.Do): fn must
// use the ctx it is given.
func (c *Client) Do(ctx context.Context, fn func(ctx context.Context, rdb redis.UniversalClient) error) error {
	return c.guard.Do(ctx, func(ctx context.Context) error { return fn(ctx, c.rdb) })
}

// DoBulk is Do bounded by the bulk timeout (Guard.DoBulk): for a walk's
// worth of data, never on a request's path.
func (c *Client) DoBulk(ctx context.Context, fn func(ctx context.Context, rdb redis.UniversalClient) error) error {
	return c.guard.DoBulk(ctx, func(ctx context.Context) error { return fn(ctx, c.rdb) })
}

// Ping checks Redis through the guard.
func (c *Client) Ping(ctx context.Context) error {
	return c.Do(ctx, func(ctx context.Context, rdb redis.UniversalClient) error { return rdb.Ping(ctx).Err() })
}

// State is the breaker's state now (for the admin listener).
func (c *Client) State() upstream.BreakerState { return c.guard.State() }

// Fallback counts one answer given in-process for use because of err.
func (c *Client) Fallback(ctx context.Context, use Use, _ error) { c.metrics.Fallback(ctx, use) }

// Close closes the connections.
func (c *Client) Close() error { return c.rdb.Close() }

// Form is the form of Redis the client reaches.
func (c *Client) Form() Form { return c.form }

// Nodes are the addresses the client works with now, for /fleet: the
// primary last connected to (Sentinel: after a promotion, the new one once
// a call has reached it), or the Cluster's primaries from its slot map
// (within the call timeout). Nil before the first connection.
func (c *Client) Nodes(ctx context.Context) []string {
	if cc, ok := c.rdb.(*redis.ClusterClient); ok {
		ctx, cancel := context.WithTimeout(ctx, c.timeout)
		defer cancel()
		var mu sync.Mutex
		var nodes []string
		_ = cc.ForEachMaster(ctx, func(_ context.Context, n *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			nodes = append(nodes, n.Options().Addr)
			return nil
		})
		slices.Sort(nodes)
		return nodes
	}
	if p := c.node.Load(); p != nil {
		return []string{*p}
	}
	return nil
}

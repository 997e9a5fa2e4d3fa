package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/edge/ratelimit/redislimit"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/fleet"
)

// fleetRefreshAhead is the cache's refresh-ahead with Redis: each instance
// re-reads the shared snapshot every TTL/2, and takes a publication up to
// one TTL old, so the PMS is walked about once per TTL across the fleet
// (a refresh at 0.8 TTL, the in-process default, would walk every 0.8 TTL).
const fleetRefreshAhead = 0.5

// fleetPoll is how often an instance waiting for another's walk looks for
// its publication.
const fleetPoll = 50 * time.Millisecond

// member is this instance's membership of a fleet sharing one Redis
// (EDGE_REDIS_URL, _SENTINELS or _CLUSTER; docs/scaling.md): fleet-wide
// limits and one PMS walk per brand, mode and TTL. Nil without a Redis:
// all in-process.
type member struct {
	brand  string
	client *fleet.Client
	lim    *redislimit.Limiter // its refill runs until close
	store  *fleet.Store
	log    *slog.Logger
}

// joinFleet connects (lazily: Redis may be down at start, that is no
// error) to the Redis cfg.Redis names; nil when it names none. The
// operator files (CA bundle, client certificate) are read here: one that
// cannot be read is a start-up error; a server they do not let the edge
// trust is a warning and the in-process fallback, as Redis down is.
//
// It redirects go-redis's logger, a process-wide setting of the library
// (redis.SetLogger), to log at debug level: without it go-redis prints
// "connection pool: failed to dial" lines on stderr while Redis is down.
// Breaker transitions are what operators see (fleet.Guard logs them once).
func joinFleet(ctx context.Context, cfg settings, log *slog.Logger, tel *observability.Telemetry) (*member, error) {
	if !cfg.Redis.Configured() {
		return nil, nil
	}
	log = log.With("component", "redis")
	redis.SetLogger(goRedisLog{log})
	fc, err := cfg.Redis.Config()
	if err != nil {
		return nil, err
	}
	fc.Log, fc.Meter, fc.Tracer = log, tel.MeterProvider().Meter(observability.ScopeName), tel.TracerProvider()
	client, err := fleet.New(fc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", redisSetting(cfg.Redis), err)
	}
	m := newMember(cfg.Brand, client, cfg.FleetSecret, log)
	where := cfg.Redis.Describe()
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	switch err := client.Ping(pctx); {
	case err == nil:
		log.Info("redis reachable: limits and snapshot loads shared", "redis", where, "nodes", client.Nodes(pctx))
	case fleet.IsTLSTrust(err):
		log.Warn("redis TLS certificate not trusted (check EDGE_REDIS_CA_FILE); limits and snapshot loads are in-process until it is",
			"redis", where, "error", err)
	default: // a wrong password shows as WRONGPASS: Redis's reply never holds the password
		log.Warn("redis unreachable at start; limits and snapshot loads are in-process until it answers",
			"redis", where, "error", err)
	}
	return m, nil
}

// newMember is the membership of brand's instances through client.
func newMember(brand string, client *fleet.Client, secret []byte, log *slog.Logger) *member {
	return &member{brand: brand, client: client, lim: redislimit.New(redislimit.Config{Client: client, Brand: brand}),
		store: fleet.NewStore(client, 0, nil, secret), log: log}
}

func (m *member) close() {
	m.lim.Close()
	_ = m.client.Close()
}

// limiter is the edge's Limiter over Redis; nil for no member.
func (m *member) limiter() ratelimit.Limiter {
	if m == nil {
		return nil
	}
	return m.lim
}

// loader wraps the default load of one mode's cache with the fleet's
// Coordinator; nil (the default load) for no member or no cache.
func (m *member) loader(d *upstream.Direct, mode keys.Mode, ttl, loadTimeout time.Duration) cache.Loader {
	if m == nil || ttl <= 0 {
		return nil
	}
	c := &fleet.Coordinator{
		Store:      m.store,
		LeaseTTL:   loadTimeout, // a leader's walk cannot last longer
		PublishTTL: ttl,         // older publications are never taken
		Wait:       loadTimeout / 2,
		Poll:       fleetPoll,
		Log:        m.log,
		Count:      m.client,
	}
	var last atomic.Pointer[upstream.Snapshot] // the same publication again: the same snapshot
	return func(ctx context.Context) (*upstream.Snapshot, error) {
		l, err := c.Load(ctx, m.brand, string(mode), time.Now().Add(-ttl), d.Properties)
		if err != nil {
			return nil, err
		}
		if prev := last.Load(); prev != nil && prev.LoadedAt.Equal(l.LoadedAt) {
			return prev, nil
		}
		s := upstream.SnapshotOf(l.Properties, l.LoadedAt)
		last.Store(s)
		return s, nil
	}
}

// fleetHandler serves GET /fleet on the admin listener: whether Redis is
// configured, in which form and through which node(s), and its circuit
// breaker's state ("closed": shared; "open" or "half-open": in-process
// fallback).
func fleetHandler(m *member) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		state := struct {
			Redis   string   `json:"redis"`             // "off" or "on"
			Form    string   `json:"form,omitempty"`    // primary, sentinel, cluster
			Master  string   `json:"master,omitempty"`  // the Sentinel form's master name
			Nodes   []string `json:"nodes,omitempty"`   // primary or current Sentinel primary; the Cluster's primaries
			Breaker string   `json:"breaker,omitempty"` // closed, half-open, open
			Shared  bool     `json:"shared"`            // limits and loads go through Redis now
		}{Redis: "off"}
		if m != nil {
			st := m.client.State()
			state.Redis, state.Breaker, state.Shared = "on", st.String(), st == upstream.BreakerClosed
			state.Form, state.Master, state.Nodes = string(m.client.Form()), m.client.Master(), m.client.Nodes(r.Context())
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(state)
	})
}

// goRedisLog sends go-redis's internal log lines to slog at debug level.
type goRedisLog struct{ log *slog.Logger }

func (g goRedisLog) Printf(ctx context.Context, format string, v ...any) {
	if g.log.Enabled(ctx, slog.LevelDebug) {
		g.log.DebugContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
	}
}

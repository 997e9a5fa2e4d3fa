package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/partner-edge/partner-edge/upstream/pms"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/edge/ratelimit/redislimit"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/events/redisevents"
	"github.com/partner-edge/partner-edge/upstream/fleet"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
)

// member is this instance's membership of a fleet sharing one Redis
// (EDGE_REDIS_URL, _SENTINELS or _CLUSTER; docs/scaling.md): fleet-wide
// limits and one PMS walk per brand, mode and TTL. Nil without a Redis:
// all in-process.
type member struct {
	brand  string
	client *redisconn.Client
	lim    *redislimit.Limiter // its refill runs until close
	store  *fleet.Store
	log    *slog.Logger
}

// joinFleet connects (lazily: Redis may be down at start, that is no
// error) to the Redis cfg.Redis names; nil when it names none. The
// operator files (CA bundle, client certificate) are read here: one that
// cannot be read is a start-up error; a server they do not let the edge
// trust is a warning and the in-process fallback, as Redis down is
// (redisconn.Client.Announce).
func joinFleet(ctx context.Context, cfg settings, log *slog.Logger, tel *observability.Telemetry) (*member, error) {
	if !cfg.Redis.Configured() {
		return nil, nil
	}
	log = log.With("component", "redis")
	redisconn.SetLibraryLogger(log)
	fc, err := cfg.Redis.Config()
	if err != nil {
		return nil, err
	}
	fc.Log, fc.Meter, fc.Tracer = log, tel.Meter(), tel.TracerProvider()
	client, err := redisconn.New(fc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Redis.Variable(), err)
	}
	client.Announce(ctx, cfg.Redis.Describe(), log)
	return newMember(cfg.Brand, client, cfg.FleetSecret, log), nil
}

// newMember is the membership of brand's instances through client.
func newMember(brand string, client *redisconn.Client, secret []byte, log *slog.Logger) *member {
	return &member{brand: brand, client: client, lim: redislimit.New(redislimit.Config{Client: client, Brand: brand}),
		store: fleet.NewStore(client, 0, secret), log: log}
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

// loader is the load of one mode's cache shared through Redis
// (fleet.Loader); nil (the default load) for no member or no cache. The
// leader's lease outlasts its slowest page: three attempts and their
// waits. The walks this member makes are the ones it appends to the
// events feed.
func (m *member) loader(d *pms.Direct, mode keys.Mode, cfg settings, feed *events.Feed, walks *fleet.WalkLengths) cache.Loader {
	if m == nil {
		return nil
	}
	return fleet.Loader(fleet.LoaderConfig{Store: m.store, Count: m.client, Brand: m.brand, Mode: string(mode),
		TTL: cfg.CacheTTL, WalkTimeout: cfg.PMSWalkTimeout, LeaseTTL: max(fleet.DefaultLeaseTTL, 3*cfg.PMSAttempt+5*time.Second),
		Log: m.log, Walk: feed.Walked(d.Properties), Walks: walks})
}

// walkLengths is the fleet's record of its last walk's length for one
// mode's loads (fleet.WalkLengths); nil for no member.
func (m *member) walkLengths() *fleet.WalkLengths {
	if m == nil {
		return nil
	}
	return &fleet.WalkLengths{}
}

// events is one mode's events feed in Redis (redisevents); nil for no
// member: the feed stays in memory.
func (m *member) events(mode keys.Mode, cfg settings) (events.Shared, error) {
	if m == nil {
		return nil, nil
	}
	return redisevents.New(redisevents.Config{Client: m.client, Secret: cfg.FleetSecret, Brand: m.brand, Mode: string(mode),
		Retention: cfg.EventsRetention, Max: cfg.EventsMax, MaxBytes: cfg.EventsMaxBytes})
}

// fleetHandler serves GET /fleet (redisconn.Client.StatusHandler).
func fleetHandler(m *member) http.Handler {
	if m == nil {
		return (*redisconn.Client)(nil).StatusHandler()
	}
	return m.client.StatusHandler()
}

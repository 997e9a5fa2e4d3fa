// Package edge is the HTTP face of the partner API: routing, middleware
// (the request's state and deadline, access log, authentication by key or
// token, quotas, header and query checks, content negotiation), handlers,
// and the answers they write (JSON, compressed, or problem+json). Serving
// it (TLS, lifecycle) is edge/listener's; the limits it applies are
// edge/ratelimit's; a request's client address is edge/internal/clientaddr's.
package edge

import (
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/problem"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// Config is what NewServer needs besides its collaborators. The settings
// behind its fields are docs/operations.md's (EDGE_*).
type Config struct {
	// Brand is the brand this deployment serves. Required: keys of any
	// other brand get 403 BRAND_ACCESS_DENIED.
	Brand string
	// DocsURL is the documentation base: the problem type prefix and the
	// API info documentationUrl.
	DocsURL string
	// Docs, when not nil and DocsPath is set (a path outside /v1, such as
	// "/docs"), serves the documentation site there, relative to DocsPath:
	// unauthenticated, outside the checks of /v1, still logged and traced.
	Docs     http.Handler
	DocsPath string
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// Logger receives error logs, and the access log when AccessLog is
	// nil. Nil discards them.
	Logger *slog.Logger
	// AccessLog receives one "request" line per answered request (info; 5xx
	// at error). Nil means Logger.
	AccessLog *slog.Logger
	// AccessLogSample is the fraction of successful (below 400) requests'
	// lines written (EDGE_ACCESS_LOG_SAMPLE); zero, or 1 and above, writes
	// every line.
	AccessLogSample float64
	// Healthy reports whether the process can serve (keys usable, not
	// draining). Nil means always healthy.
	Healthy func() bool
	// Telemetry traces every request and records its metrics. Nil: no
	// spans, no metrics, no Traceparent response header.
	Telemetry *observability.Telemetry
	// RateLimit is the default quota of each key (EDGE_RATE_LIMIT,
	// EDGE_RATE_BURST); a key's own rateLimit overrides it. A zero Burst
	// means max(1, ceil(PerSecond)); the zero value limits only keys with
	// their own rateLimit.
	RateLimit ratelimit.Limit
	// RequestTimeout is the overall deadline of one request
	// (EDGE_REQUEST_TIMEOUT). Zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// MaxConcurrent caps the requests in progress (EDGE_MAX_CONCURRENT;
	// shed.go). Zero (or less) disables the cap.
	MaxConcurrent int
	// AuthFailLimit is how many 401s a client address may get in a minute
	// before 429 RATE_LIMITED (EDGE_AUTH_FAIL_LIMIT; quota.go). Zero
	// disables the throttle.
	AuthFailLimit int
	// Limiter keeps the buckets of the per-key quotas and the failed-auth
	// throttle (redislimit.Limiter shares them across a fleet). Nil means an
	// in-process ratelimit.Local on Now, which also decides whenever the
	// Limiter returns an error.
	Limiter ratelimit.Limiter
	// TrustedProxies are the proxies whose X-Forwarded-For is believed for
	// the client address (ParseTrustedProxies). Empty: the TCP peer.
	TrustedProxies []netip.Prefix
	// OAuth turns on OAuth 2.0 access tokens beside API keys
	// (docs/contract.md section 12). Nil: tokens off.
	OAuth *OAuth
	// Events are the feeds of property changes of the live and sandbox
	// PMS (GET /v1/events, docs/contract.md section 23), each watching its
	// catalog's load. A nil feed: lists of that mode carry no
	// meta.events, and its events requests fail (500), a wiring fault.
	Events Feeds
	// Webhooks keeps partners' webhook endpoints (docs/contract.md section
	// 26, docs/webhooks.md): the store in EDGE_DATA_DIR or a fleet's Redis.
	// Nil: the webhook routes answer 503 naming EDGE_DATA_DIR (a single
	// edge without a data directory).
	Webhooks webhooks.Registry
	// WebhookAllowHTTP lets endpoints have http URLs besides https
	// (EDGE_WEBHOOK_ALLOW_HTTP, test setups and the demo). False: https only.
	WebhookAllowHTTP bool
	// WebhooksChanged, when not nil, is called after an endpoint was
	// created, deleted or enabled (the Deliverer's Wake). Nil: the
	// Deliverer finds the change at its next poll.
	WebhooksChanged func()
}

// Feeds are the events feeds of the two modes (Config.Events).
type Feeds struct {
	Live, Sandbox *events.Feed
}

// server holds what the middleware needs; handlers are made by handler
// makers (handlers.go) from the few fields each one uses.
type server struct {
	responder // fail, writeOne, writePage
	cfg       Config
	keys      KeyStore
	catalogs  catalogs
	feeds     feeds
	webhooks  webhookDeps
	log       *slog.Logger
	info      []byte                   // the API info object, encoded once
	tel       *observability.Telemetry // nil: no telemetry
	metrics   *observability.Metrics   // nil: no metrics
	oauth     *oauthState              // nil: access tokens off

	limiter       ratelimit.Limiter // cfg.Limiter, or local
	local         *ratelimit.Local  // in-process buckets: the default and the fallback
	defaultLimit  ratelimit.Limit   // the default per-key quota, when hasDefault
	hasDefault    bool
	defaultPolicy string          // its RateLimit-Policy field
	authLimit     ratelimit.Limit // the failed-auth throttle's bucket, when hasAuthLimit
	hasAuthLimit  bool

	// realClock: Config.Now is time.Now, so a request's start time also
	// sets its deadline (one clock read).
	realClock bool
	mux       *chi.Mux  // the router, for the routing context withState gives each request
	routeCtxs sync.Pool // of *chi.Context, reused as chi's own pool would: its slices keep their capacity
}

// NewServer returns the partner API handler. live serves svc_live_ keys;
// sandbox serves svc_test_ keys and may be nil (test keys then get 403
// TEST_MODE_UNAVAILABLE).
func NewServer(cfg Config, ks KeyStore, live, sandbox upstream.Catalog) http.Handler {
	realClock := cfg.Now == nil
	if realClock {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Healthy == nil {
		cfg.Healthy = func() bool { return true }
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	s := &server{
		responder: responder{problems: problem.Writer{DocsURL: cfg.DocsURL, Now: cfg.Now, AppendTime: mapping.AppendTime}, now: cfg.Now},
		cfg:       cfg,
		keys:      ks,
		catalogs:  catalogs{live: live, sandbox: sandbox},
		feeds:     feeds(cfg.Events),
		log:       cfg.Logger,
		info:      apiInfo(cfg.DocsURL),
		tel:       cfg.Telemetry,
		local:     ratelimit.NewLocal(cfg.Now, 0),
		limiter:   cfg.Limiter,
		oauth:     newOAuthState(cfg.OAuth, cfg.DocsURL),

		realClock: realClock,
	}
	s.comp = newCompressor()
	s.webhooks = webhookDeps{reg: cfg.Webhooks, cats: s.catalogs, feeds: s.feeds, now: cfg.Now,
		allowHTTP: cfg.WebhookAllowHTTP, wake: cfg.WebhooksChanged, chain: chainOf(ks)}
	if s.webhooks.wake == nil {
		s.webhooks.wake = func() {}
	}
	if s.limiter == nil {
		s.limiter = s.local
	}
	s.defaultLimit = cfg.RateLimit.WithDefaultBurst()
	s.hasDefault = s.defaultLimit.Valid()
	if s.hasDefault {
		s.defaultPolicy = policyField(s.defaultLimit)
	}
	s.authLimit, s.hasAuthLimit = authFailLimit(cfg.AuthFailLimit)
	if s.tel != nil {
		s.metrics = s.tel.Metrics()
	}
	return s.routes()
}

// catalogs are the catalogs of the two modes.
type catalogs struct {
	live    upstream.Catalog
	sandbox upstream.Catalog // nil: test mode unavailable
}

// of returns the catalog that serves key's mode.
func (c catalogs) of(k *keys.Key) upstream.Catalog {
	if k.Mode == keys.ModeTest {
		return c.sandbox
	}
	return c.live
}

// feeds are Config.Events, by key mode.
type feeds Feeds

// of returns the feed of key's mode; nil: none.
func (f feeds) of(k *keys.Key) *events.Feed {
	if k.Mode == keys.ModeTest {
		return f.Sandbox
	}
	return f.Live
}

// statusClientClosed is logged (never sent) when the partner went away
// before an answer, as nginx and Caddy do.
const statusClientClosed = 499

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
)

// Config is what NewServer needs besides its collaborators.
type Config struct {
	// Brand is the brand this deployment serves. Required: keys of any
	// other brand get 403 BRAND_ACCESS_DENIED.
	Brand string
	// DocsURL is the documentation base: the problem type prefix and the
	// API info documentationUrl.
	DocsURL string
	// Docs, when not nil, serves the documentation site at DocsPath (a path
	// outside /v1, such as "/docs"; the handler sees paths relative to it):
	// unauthenticated, outside the checks of /v1, still logged and traced.
	// Nil (or an empty DocsPath) serves no documentation.
	Docs     http.Handler
	DocsPath string
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
	// Logger receives error logs, and the access log when AccessLog is
	// nil. Nil discards them.
	Logger *slog.Logger
	// AccessLog receives one "request" line per answered request (info; 5xx
	// at error). Nil means Logger. cmd/edge gives it a logger over an
	// observability.LogBuffer, so a slow output never holds a request.
	AccessLog *slog.Logger
	// AccessLogSample is the fraction of successful requests (status below
	// 400) whose access-log line is written, for a deployment whose log
	// pipeline cannot take every line; errors are always written. Zero, or
	// 1 and above, writes every line (the default: no sampling).
	AccessLogSample float64
	// Healthy reports whether the process can serve (keys usable, not
	// draining). Nil means always healthy.
	Healthy func() bool
	// Telemetry traces every request (a server span continuing a valid
	// traceparent, named by route template) and records its metrics. Nil
	// means no spans and no metrics; the Traceparent response header then
	// is not sent either.
	Telemetry *observability.Telemetry
	// RateLimit is the default quota of each key (429 RATE_LIMITED beyond
	// it; EDGE_RATE_LIMIT, EDGE_RATE_BURST); a key's own rateLimit in the
	// key file overrides it. A zero Burst means max(1, ceil(PerSecond)).
	// The zero value sets no default: only keys with their own rateLimit
	// are limited.
	RateLimit ratelimit.Limit
	// RequestTimeout is the overall deadline of one request (operations.md
	// EDGE_REQUEST_TIMEOUT): PMS calls and retries fit inside it; a request
	// still waiting on the PMS when it passes answers 504. Zero means
	// DefaultRequestTimeout (10 s).
	RequestTimeout time.Duration
	// MaxConcurrent caps the requests in progress (operations.md
	// EDGE_MAX_CONCURRENT); beyond it the edge answers 503
	// SERVICE_UNAVAILABLE with Retry-After: 1 at once. /v1/health is never
	// shed. Zero (or less) disables the cap.
	MaxConcurrent int
	// AuthFailLimit is how many 401 INVALID_API_KEY answers a client
	// address may get in a minute; past it the address gets 429
	// RATE_LIMITED before any key is looked at. Zero disables the throttle
	// (cmd/edge's default is 20).
	AuthFailLimit int
	// Limiter keeps the buckets of both the per-key quotas and the
	// failed-auth throttle; one over Redis (redislimit.Limiter) shares them
	// across a fleet. Nil means an in-process ratelimit.Local on Now. When
	// it returns an error, the edge decides with an in-process
	// ratelimit.Local instead.
	Limiter ratelimit.Limiter
	// TrustedProxies are the proxies whose X-Forwarded-For is believed for
	// the client address (ParseTrustedProxies). Empty: the TCP peer is the
	// client address.
	TrustedProxies []netip.Prefix
	// OAuth turns on OAuth 2.0 access tokens beside API keys, and the
	// RFC 9728 metadata route (docs/contract.md section 12). Nil: tokens off; a
	// bearer credential without the API-key prefix is then 401 INVALID_API_KEY.
	OAuth *OAuth
}

// server holds what the middleware needs; handlers are made by handler
// makers (handlers.go) from the few fields each one uses.
type server struct {
	responder // fail, writeOne, writePage
	cfg       Config
	keys      KeyStore
	catalogs  catalogs
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
		log:       cfg.Logger,
		info:      apiInfo(cfg.DocsURL),
		tel:       cfg.Telemetry,
		local:     ratelimit.NewLocal(cfg.Now, 0),
		limiter:   cfg.Limiter,
		oauth:     newOAuthState(cfg.OAuth, cfg.DocsURL),

		realClock: realClock,
	}
	s.comp = newCompressor()
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

// statusClientClosed is logged (never sent) when the partner went away
// before an answer, as nginx and Caddy do.
const statusClientClosed = 499

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/partner-edge/partner-edge/cmd/edge/internal/gcrule"
	"github.com/partner-edge/partner-edge/cmd/internal/settingval"
	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/docsite"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/listener"
	"github.com/partner-edge/partner-edge/edge/oauth"
	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/events/boltevents"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/shadow"
)

// process is one serving edge: the parts serveEdge starts, and what it stops,
// the last started first, when it returns.
type process struct {
	cfg            settings
	version        string
	log            *slog.Logger
	stdout, stderr io.Writer
	wg             sync.WaitGroup // every goroutine of serveEdge ends before it returns
	stops          []func()       // run by stop, the last added first
	draining       atomic.Bool    // health answers 503 from the start of the drain

	tel           *observability.Telemetry
	access        *observability.AccessLog
	demo          *demoEnv // nil: not the demo
	store         *keys.Store
	tlsReload     chan struct{}  // SIGHUP also re-reads the TLS pair
	fm            *member        // nil: no Redis
	data          *boltevents.DB // EDGE_DATA_DIR's events file; nil: none (datadir.go)
	sh            *shadow.Shadow // nil: no candidate
	live, sandbox upstream.Catalog
	feeds         edge.Feeds        // the events feeds of the two modes
	ready         []edge.ReadyCheck // the PMS snapshots /readyz waits for (startMode)
	tokens        *edge.OAuth       // nil: tokens off
	hooks         *hooks            // webhooks' delivery; nil: off (webhooks.go)
}

func (p *process) onStop(f func()) { p.stops = append(p.stops, f) }

func (p *process) stop() {
	for i := len(p.stops) - 1; i >= 0; i-- {
		p.stops[i]()
	}
}

// serveEdge is the edge itself: it parses the settings, starts every part and
// serves until ctx ends (a signal), then drains and stops them.
func serveEdge(ctx context.Context, args []string, getenv lookupEnv, stdout, stderr io.Writer) error {
	cfg, err := parseSettings(args[1:], getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bad settings:\n%w", err)
	}
	isDemo := cfg.PMSBaseURL == ""
	if isDemo {
		demoDefaults(&cfg)
	}
	p := &process{cfg: cfg, version: buildVersion(), stdout: stdout, stderr: stderr,
		log: observability.NewLogger(stderr, cfg.LogFormat, cfg.LogLevel, cfg.PMSToken)}
	defer p.stop()
	p.onStop(observability.RouteStdLog(p.log)) // net/http's idle-connection lines, the PMS's bytes cut
	if err := checkTLS(cfg); err != nil {
		return err
	}
	// Both listeners bind before anything starts: one that cannot is a
	// start-up error naming its setting (docs/contract.md section 18), never an
	// edge serving on without metrics.
	publicLn, adminLn, err := bindListeners(cfg)
	if err != nil {
		return err
	}
	p.onStop(func() { _ = publicLn.Close() }) // listener.Serve closes them too; a second Close is harmless
	if adminLn != nil {
		p.onStop(func() { _ = adminLn.Close() })
	}
	p.onStop(p.wg.Wait)
	ctx, cancel := context.WithCancel(ctx)
	p.onStop(cancel)
	gcrule.Tune(ctx, getenv) // the GC headroom rule unless GOGC is set
	if err := p.start(ctx, func(k string) string { v, _ := getenv(k); return v }, isDemo); err != nil {
		return err
	}
	late, demoDocs, err := p.handler()
	if err != nil {
		return err
	}
	p.log.Info("edge starting", "version", p.version, "addr", p.cfg.Addr, "brand", p.cfg.Brand,
		"demo", p.demo != nil, "sandbox", p.sandbox != nil, "tls", p.cfg.TLSCert != "",
		"traces_exporter", p.tel.TracesExporter(), "redis", p.fm != nil, "oauth", p.tokens != nil)
	if adminLn != nil {
		p.wg.Go(func() {
			serveAdmin(ctx, adminLn, p.cfg.AdminAddr, p.tel, settingval.RedactArgs(args), adminParts{
				fleet: fleetHandler(p.fm), shadow: shadow.Handler(p.sh), ready: p.readiness()}, p.log)
		})
	}
	return listener.Serve(ctx, p.serveConfig(publicLn, late, demoDocs))
}

// checkTLS reads the TLS pair before any listener opens (docs/contract.md
// section 22): a file that cannot be served is a start-up error naming its
// setting, not the file alone after the admin listener already answered.
func checkTLS(cfg settings) error {
	if cfg.TLSCert == "" {
		return nil
	}
	err := listener.CheckTLSPair(cfg.TLSCert, cfg.TLSKey)
	if name := map[string]string{listener.TLSCertificate: "EDGE_TLS_CERT", listener.TLSKey: "EDGE_TLS_KEY",
		listener.TLSPair: "EDGE_TLS_CERT and EDGE_TLS_KEY"}[listener.RefusedTLSFile(err)]; name != "" {
		return fmt.Errorf("%s: %w", name, err)
	}
	return err
}

// start starts, in order, telemetry and the access log, the demo's
// simulators, the key file, the fleet, the data directory, webhooks'
// deliverer, the shadow candidate, the PMS catalogs, the token verifier,
// and then delivery.
func (p *process) start(ctx context.Context, env func(string) string, isDemo bool) error {
	if err := p.startTelemetry(ctx, env); err != nil {
		return err
	}
	if isDemo {
		demo, err := startDemo(ctx, &p.cfg, env, p.log)
		if err != nil {
			return fmt.Errorf("start the demo: %w", err)
		}
		p.demo = demo
		p.onStop(demo.close)
	}
	for _, start := range []func(context.Context) error{p.startKeys, p.startFleet,
		func(context.Context) error { return p.startData() }, p.startWebhooks, p.startCatalogs, p.startOAuth, p.runWebhooks} {
		if err := start(ctx); err != nil {
			return err
		}
	}
	return nil
}

// startTelemetry starts OpenTelemetry and the access log;
// both are flushed at the end.
func (p *process) startTelemetry(ctx context.Context, env func(string) string) error {
	// The SDK's failures (an export refused, a backend away) become
	// rate-limited JSON WARN lines of the log, never its default free text
	// on stderr (docs/observability.md, "When telemetry fails"). The SDK
	// has one handler per process: the last edge started in a process
	// (tests start several) logs them.
	sdkErrs := observability.NewSDKErrors(p.log, env, time.Minute, nil)
	otel.SetErrorHandler(otel.ErrorHandlerFunc(sdkErrs.Handle))
	otel.SetLogger(sdkErrs.Logger())
	tel, err := observability.New(ctx, observability.Config{Getenv: env, Version: p.version,
		Brand: p.cfg.Brand, TailSampling: true, KeepSlowerThan: p.cfg.TraceSlow, KeepRate: p.cfg.TraceKeepRate})
	if err != nil {
		return fmt.Errorf("bad OpenTelemetry settings: %w", err)
	}
	p.tel = tel
	p.onStop(func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(sctx); err != nil {
			p.log.Warn("telemetry flush failed", "error", err)
		}
	})
	p.access, err = observability.OpenAccessLog(p.cfg.AccessLog, p.cfg.LogFormat, p.cfg.LogLevel, p.cfg.PMSToken, p.stdout, p.stderr)
	if err != nil {
		return fmt.Errorf("EDGE_ACCESS_LOG: %w", err)
	}
	p.onStop(func() { p.access.Close(ctx, p.log) }) // after Serve: every answered request's line is written
	if p.access.Buf != nil {
		return observability.ObserveLogBuffer(tel.MeterProvider(), "access", p.access.Buf)
	}
	return nil
}

// startKeys loads the key file and watches it, and SIGHUP, until ctx ends.
func (p *process) startKeys(ctx context.Context) error {
	metrics := p.tel.Metrics()
	store, err := keys.Open(p.cfg.KeysFile, keys.Options{Logger: p.log,
		OnReload: func(ok bool) { metrics.KeyReload(context.Background(), ok) }})
	if err != nil {
		return fmt.Errorf("load EDGE_KEYS_FILE: %w", err)
	}
	p.store, p.tlsReload = store, make(chan struct{}, 1)
	if brands := store.Brands(); len(brands) > 0 && !slices.Contains(brands, p.cfg.Brand) {
		// A warning, not an error: keys of the brand may be added while the
		// edge runs (edge keys add), and it then serves them without a
		// restart; until then it refuses every key (docs/operations.md).
		p.log.Warn("no key in EDGE_KEYS_FILE belongs to EDGE_BRAND: every key will be refused (403 BRAND_ACCESS_DENIED) until one is added",
			"brand", p.cfg.Brand, "key_brands", brands, "file", p.cfg.KeysFile)
	}
	p.wg.Go(func() {
		if err := store.Watch(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("key file watch stopped; SIGHUP still reloads", "error", err)
		}
	})
	p.wg.Go(func() { reloadOnHangup(ctx, store, p.tlsReload) })
	return nil
}

// startFleet joins the fleet's Redis when one is named (fleet.go).
func (p *process) startFleet(ctx context.Context) error {
	fm, err := joinFleet(ctx, p.cfg, p.log, p.tel) // nil without a Redis (EDGE_REDIS_URL, _SENTINELS, _CLUSTER)
	if err != nil || fm == nil {
		return err
	}
	p.fm = fm
	// /fleet follows Redis even while no request arrives (docs/contract.md
	// section 17): a small write every second through the guard, stopped
	// before the client is closed.
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); fm.client.Watch(wctx, redisconn.DefaultHealthEvery) }()
	p.onStop(func() { stopWatch(); <-watched; fm.close() })
	return nil
}

// startCatalogs starts the shadow candidate (nil without
// PMS_CANDIDATE_URL) and the live mode and, with PMS_SANDBOX_URL, the
// sandbox's (startMode).
func (p *process) startCatalogs(ctx context.Context) error {
	sh, err := newShadow(p.cfg, p.version, p.log, p.tel)
	if err != nil {
		return fmt.Errorf("PMS_CANDIDATE_URL: %w", err)
	}
	if sh != nil {
		p.sh = sh
		p.wg.Go(func() { sh.Run(ctx) })
	}
	if p.live, p.feeds.Live, err = p.startMode(ctx, keys.ModeLive, p.cfg.PMSBaseURL, sh); err != nil || p.cfg.PMSSandbox == "" {
		return err
	}
	p.sandbox, p.feeds.Sandbox, err = p.startMode(ctx, keys.ModeTest, p.cfg.PMSSandbox, nil) // the candidate stands for the live PMS
	return err
}

// startMode builds one mode's events feed and catalog of the PMS at url,
// each stopped at the end, and starts its walks on the clock until ctx
// ends: the first now, so that no partner waits for it (docs/contract.md
// section 22), then one a TTL after the last ended, whether partners call
// or not (docs/contract.md section 24).
func (p *process) startMode(ctx context.Context, mode keys.Mode, url string, sh *shadow.Shadow) (upstream.Catalog, *events.Feed, error) {
	kept, err := p.dataFeed(mode)
	if err != nil {
		return nil, nil, fmt.Errorf("EDGE_DATA_DIR: %w", err)
	}
	feed, err := newFeed(p.cfg, mode, p.log, p.tel, p.fm, kept, p.hooks.wake)
	if err != nil {
		return nil, nil, err
	}
	p.onStop(feed.Close)
	c, err := newCatalog(p.cfg, url, mode, p.version, p.log, p.tel, p.fm, sh, feed)
	if err != nil {
		return nil, nil, err
	}
	p.onStop(c.Close)
	p.ready = append(p.ready, edge.ReadyCheck{Name: "pms " + string(mode) + " snapshot", Check: c.Ready})
	c.Schedule(ctx)
	return c, feed, nil
}

// readiness is GET /readyz (docs/operations.md, "Deploying behind a load balancer"):
// ready once every configured PMS has a snapshot, while the edge is not
// draining and its key file holds a key. /v1/health stays liveness.
func (p *process) readiness() http.Handler {
	checks := append([]edge.ReadyCheck{
		{Name: "draining", Check: func() (bool, string) {
			if p.draining.Load() {
				return false, "the edge is shutting down (SIGTERM): it finishes the requests under way"
			}
			return true, ""
		}},
		{Name: "key file", Check: func() (bool, string) {
			if !p.store.Usable() {
				return false, "EDGE_KEYS_FILE holds no usable key: every partner would be refused"
			}
			return true, ""
		}},
	}, p.ready...)
	return edge.HandleReady(checks...)
}

// newHandler is the partner API with problem types under docsURL and, when
// docsPath is set, the documentation site there, its examples and OpenAPI
// document on publicURL.
func (p *process) newHandler(docsURL, docsPath, publicURL string) (http.Handler, error) {
	cfg := p.cfg
	ec := edge.Config{
		Brand:          cfg.Brand,
		DocsURL:        docsURL,
		Logger:         p.log,
		Healthy:        func() bool { return !p.draining.Load() && p.store.Usable() },
		Telemetry:      p.tel,
		RateLimit:      ratelimit.Limit{PerSecond: cfg.RatePerSecond, Burst: cfg.RateBurst},
		RequestTimeout: cfg.RequestTimeout,
		MaxConcurrent:  cfg.MaxConcurrent,
		AuthFailLimit:  cfg.AuthFailLimit,
		TrustedProxies: cfg.TrustedProxies,
		Limiter:        p.fm.limiter(), // nil: in-process
		OAuth:          p.tokens,
		Events:         p.feeds,

		AccessLog:       p.access.Log, // its own buffered stream: stdout by default
		AccessLogSample: cfg.AccessLogSample,
	}
	if h := p.hooks; h != nil { // nil: webhook routes answer 503 (webhooks.go)
		ec.Webhooks, ec.WebhookAllowHTTP, ec.WebhooksChanged = h.Registry, h.AllowHTTP, h.Deliverer.Wake
	}
	docs, err := docsite.HandlerAt(docsite.Options{DocsURL: docsURL, BasePath: docsPath,
		PublicURL: publicURL, Contact: cfg.DocsContact})
	if err != nil {
		return nil, err
	}
	if docs != nil {
		ec.Docs, ec.DocsPath = docs, docsPath
	}
	return edge.NewServer(ec, p.store, p.live, p.sandbox), nil
}

// handler is the public listener's handler. The demo (which takes no
// EDGE_PUBLIC_URL or EDGE_DOCS_URL: checkDemo) serves its own docs and points problem types at them: their URL is
// known once it listens (EDGE_ADDR may name port 0), so the handler is set
// then (demoDocs). With the site off too, the placeholder default.
func (p *process) handler() (late *listener.LateHandler, demoDocs bool, err error) {
	cfg := &p.cfg
	demoDocs = p.demo != nil && cfg.DocsPath != "" && cfg.DocsURL == ""
	if cfg.DocsURL == "" && !demoDocs {
		cfg.DocsURL = docsite.DefaultDocsURL
	}
	late = &listener.LateHandler{}
	if !demoDocs {
		h, err := p.newHandler(cfg.DocsURL, cfg.DocsPath, cfg.PublicURL)
		if err != nil {
			return nil, false, err
		}
		late.Set(h)
	}
	return late, demoDocs, nil
}

// serveConfig is the public listener's.
func (p *process) serveConfig(ln net.Listener, late *listener.LateHandler, demoDocs bool) listener.ServeConfig {
	cfg := p.cfg
	return listener.ServeConfig{
		Addr:            cfg.Addr,
		Listener:        ln,
		Handler:         late,
		TLSCertFile:     cfg.TLSCert,
		TLSKeyFile:      cfg.TLSKey,
		TLSReload:       p.tlsReload,
		RequestTimeout:  cfg.RequestTimeout,
		DrainDelay:      cfg.DrainDelay,
		ShutdownTimeout: cfg.ShutdownWait,
		OnDraining:      func() { p.draining.Store(true) },
		OnTLSReload:     func(ok bool) { p.tel.Metrics().TLSReload(context.Background(), ok) },
		Logger:          p.log,
		OnListen: func(addr net.Addr) {
			p.log.Info("edge listening", "addr", addr.String())
			if demoDocs {
				origin := demoOrigin(addr, cfg.TLSCert != "")
				p.demo.docsURL = origin + cfg.DocsPath
				h, err := p.newHandler(p.demo.docsURL, cfg.DocsPath, origin)
				if err != nil { // a broken build of the site: serve the API without it
					p.log.Error("documentation site not served", "error", err)
					h, _ = p.newHandler(docsite.DefaultDocsURL, "", "")
				}
				late.Set(h)
			}
			if p.demo != nil {
				p.demo.printBanner(p.stdout, addr, cfg.TLSCert != "")
			}
		},
	}
}

// startOAuth turns access tokens on (edge.NewOAuth) when EDGE_OAUTH_ISSUER
// and EDGE_OAUTH_AUDIENCE are set (parseSettings made sure both or neither
// are); p.tokens stays nil otherwise.
func (p *process) startOAuth(ctx context.Context) (err error) {
	if p.cfg.OAuthIssuer == "" {
		return nil
	}
	p.tokens, err = edge.NewOAuth(ctx, oauth.Config{Issuer: p.cfg.OAuthIssuer, Audience: p.cfg.OAuthAudience,
		// The issuer's failures repeat at every refetch: each warning at
		// most once a minute (docs/operations.md, "What to watch").
		JWKSHosts: p.cfg.OAuthJWKSHosts, Logger: observability.ThrottleWarnings(p.log, nil).With("component", "oauth")}, p.store)
	if err != nil {
		return fmt.Errorf("bad OAuth settings (EDGE_OAUTH_ISSUER, EDGE_OAUTH_AUDIENCE, EDGE_OAUTH_JWKS_HOSTS): %w", err)
	}
	return nil
}

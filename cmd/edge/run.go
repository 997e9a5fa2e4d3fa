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
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/docsite"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/listener"
	"github.com/partner-edge/partner-edge/edge/ratelimit"
	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/fleet"
	"github.com/partner-edge/partner-edge/upstream/shadow"
)

// run is the whole program: main only supplies the process's context,
// arguments, environment and streams. getenv is os.LookupEnv or its like:
// it tells a variable set to "" (EDGE_ADMIN_ADDR= disables the admin
// listener) from an unset one.
func run(ctx context.Context, args []string, getenv lookupEnv, stdout, stderr io.Writer) error {
	if len(args) > 1 && args[1] == "docs" {
		return runDocs(args[2:], getenv, stdout, stderr)
	}
	if len(args) > 1 && args[1] == "keys" {
		return runKeys(args[2:], getenv, stdout, stderr)
	}
	if len(args) > 1 && args[1] == "help" {
		return runHelp(stdout)
	}
	if len(args) > 1 && args[1] == "pms" {
		if len(args) > 2 && args[2] == "check" {
			return runPMSCheck(ctx, args[3:], getenv, stdout, stderr)
		}
		return usageError("usage: edge pms check [--json] [--save FILE] [--baseline FILE] [--sandbox | --candidate]")
	}
	cfg, err := parseSettings(args[1:], getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bad settings:\n%w", err)
	}
	env := envGetter(getenv)
	log := observability.NewLogger(stderr, cfg.LogFormat, cfg.LogLevel, cfg.PMSToken)
	version := buildVersion()
	if cfg.PMSBaseURL == "" {
		demoDefaults(&cfg)
	}
	// Both listeners bind before anything starts: one that cannot is a
	// start-up error naming its setting (docs/contract.md section 18), never an
	// edge serving on without metrics.
	publicLn, adminLn, err := bindListeners(cfg)
	if err != nil {
		return err
	}
	defer publicLn.Close() // listener.Serve closes them too; a second Close is harmless
	if adminLn != nil {
		defer adminLn.Close()
	}

	var wg sync.WaitGroup // every goroutine of run ends before run returns
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tuneGC(ctx, getenv)

	tel, err := observability.New(ctx, observability.Config{Getenv: env, Version: version})
	if err != nil {
		return fmt.Errorf("bad OpenTelemetry settings: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(sctx); err != nil {
			log.Warn("telemetry flush failed", "error", err)
		}
	}()
	metrics := tel.Metrics()
	access, err := openAccessLog(cfg, stdout, stderr)
	if err != nil {
		return err
	}
	defer access.close(ctx, log) // after Serve: every answered request's line is written
	if access.buf != nil {
		if err := observability.ObserveLogBuffer(tel.MeterProvider(), "access", access.buf); err != nil {
			return err
		}
	}

	var demo *demoEnv
	if cfg.PMSBaseURL == "" {
		if demo, err = startDemo(ctx, &cfg, env, log); err != nil {
			return fmt.Errorf("start the demo: %w", err)
		}
		defer demo.close()
	}

	var draining atomic.Bool
	store, err := keys.Open(cfg.KeysFile, keys.Options{Logger: log,
		OnReload: func(ok bool) { metrics.KeyReload(context.Background(), ok) }})
	if err != nil {
		return fmt.Errorf("load EDGE_KEYS_FILE: %w", err)
	}
	tlsReload := make(chan struct{}, 1) // SIGHUP also re-reads the TLS pair
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := store.Watch(ctx); err != nil && ctx.Err() == nil {
			log.Warn("key file watch stopped; SIGHUP still reloads", "error", err)
		}
	}()
	go func() { defer wg.Done(); reloadOnHangup(ctx, store, tlsReload, log) }()

	fm, err := joinFleet(ctx, cfg, log, tel) // nil without a Redis (EDGE_REDIS_URL, _SENTINELS, _CLUSTER)
	if err != nil {
		return err
	}
	if fm != nil {
		// /fleet follows Redis even while no request arrives (docs/contract.md
		// section 17): a small write every second through the guard,
		// stopped before the client is closed.
		wctx, stopWatch := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() { defer close(watched); fm.client.Watch(wctx, fleet.DefaultHealthEvery) }()
		defer func() { stopWatch(); <-watched; fm.close() }()
	}
	sh, err := newShadow(cfg, version, log, tel) // nil without PMS_CANDIDATE_URL
	if err != nil {
		return fmt.Errorf("PMS_CANDIDATE_URL: %w", err)
	}
	if sh != nil {
		wg.Add(1)
		go func() { defer wg.Done(); sh.Run(ctx) }()
	}
	live, closeLive, err := newShadowedCatalog(cfg, cfg.PMSBaseURL, keys.ModeLive, version, log, tel, fm, sh)
	if err != nil {
		return err
	}
	defer closeLive()
	var sandbox upstream.Catalog
	if cfg.PMSSandbox != "" {
		sb, closeSandbox, err := newCatalog(cfg, cfg.PMSSandbox, keys.ModeTest, version, log, tel, fm)
		if err != nil {
			return err
		}
		defer closeSandbox()
		sandbox = sb
	}

	tokens, err := newOAuth(ctx, cfg, store, log) // nil: tokens off
	if err != nil {
		return err
	}
	newHandler := func(docsURL, docsPath string) (http.Handler, error) {
		ec := edge.Config{
			Brand:          cfg.Brand,
			DocsURL:        docsURL,
			Logger:         log,
			Healthy:        func() bool { return !draining.Load() && store.Usable() },
			Telemetry:      tel,
			RateLimit:      ratelimit.Limit{PerSecond: cfg.RatePerSecond, Burst: cfg.RateBurst},
			RequestTimeout: cfg.RequestTimeout,
			MaxConcurrent:  cfg.MaxConcurrent,
			AuthFailLimit:  cfg.AuthFailLimit,
			TrustedProxies: cfg.TrustedProxies,
			Limiter:        fm.limiter(), // nil: in-process
			OAuth:          tokens,

			AccessLog:       access.log, // its own buffered stream: stdout by default
			AccessLogSample: cfg.AccessLogSample,
		}
		if err := withDocs(&ec, docsPath); err != nil {
			return nil, err
		}
		return edge.NewServer(ec, store, live, sandbox), nil
	}
	// Without a docs URL given, the demo serves its own docs and points
	// problem types at them: their URL is known once it listens (EDGE_ADDR
	// may name port 0). With the site off too, the placeholder default.
	demoDocs := demo != nil && cfg.DocsPath != "" && cfg.DocsURL == ""
	if cfg.DocsURL == "" && !demoDocs {
		cfg.DocsURL = docsite.DefaultDocsURL
	}
	if demo != nil && !demoDocs && cfg.DocsPath != "" {
		demo.docsURL = cfg.DocsURL // EDGE_PUBLIC_URL or EDGE_DOCS_URL given: the banner says where
	}
	late := &lateHandler{}
	if !demoDocs {
		h, err := newHandler(cfg.DocsURL, cfg.DocsPath)
		if err != nil {
			return err
		}
		late.set(h)
	}

	log.Info("edge starting", "version", version, "addr", cfg.Addr, "brand", cfg.Brand,
		"demo", demo != nil, "sandbox", sandbox != nil, "tls", cfg.TLSCert != "",
		"traces_exporter", tel.TracesExporter(), "redis", fm != nil, "oauth", tokens != nil)
	if adminLn != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveAdmin(ctx, adminLn, cfg.AdminAddr, tel, redactArgs(args), fleetHandler(fm), shadow.Handler(sh), log)
		}()
	}
	return listener.Serve(ctx, listener.ServeConfig{
		Addr:            cfg.Addr,
		Listener:        publicLn,
		Handler:         late,
		TLSCertFile:     cfg.TLSCert,
		TLSKeyFile:      cfg.TLSKey,
		TLSReload:       tlsReload,
		RequestTimeout:  cfg.RequestTimeout,
		DrainDelay:      cfg.DrainDelay,
		ShutdownTimeout: cfg.ShutdownWait,
		OnDraining:      func() { draining.Store(true) },
		OnTLSReload:     func(ok bool) { tel.Metrics().TLSReload(context.Background(), ok) },
		Logger:          log,
		OnListen: func(addr net.Addr) {
			log.Info("edge listening", "addr", addr.String())
			if demoDocs {
				demo.docsURL = demoOrigin(addr, cfg.TLSCert != "") + cfg.DocsPath
				h, err := newHandler(demo.docsURL, cfg.DocsPath)
				if err != nil { // a broken build of the site: serve the API without it
					log.Error("documentation site not served", "error", err)
					h, _ = newHandler(docsite.DefaultDocsURL, "")
				}
				late.set(h)
			}
			if demo != nil {
				demo.printBanner(stdout, addr, cfg.TLSCert != "")
			}
		},
	})
}

// newCatalog builds the PMS access of one mode: client (retries, breaker),
// mapping, cache, each reporting to telemetry; with a fleet member, the
// cache's loads are shared through Redis (fleet.go).
func newCatalog(cfg settings, baseURL string, mode keys.Mode, version string, log *slog.Logger, tel *observability.Telemetry, fm *member) (upstream.Catalog, func(), error) {
	return newShadowedCatalog(cfg, baseURL, mode, version, log, tel, fm, nil)
}

// newShadowedCatalog is newCatalog whose loads are each handed to sh after
// they end (nil: none; shadow.go).
func newShadowedCatalog(cfg settings, baseURL string, mode keys.Mode, version string, log *slog.Logger, tel *observability.Telemetry, fm *member, sh *shadow.Shadow) (upstream.Catalog, func(), error) {
	log = log.With("pms", string(mode))
	pm, err := upstream.NewPMSMetrics(tel.Meter(), string(mode))
	if err != nil {
		return nil, nil, fmt.Errorf("PMS metrics: %w", err)
	}
	cm, err := cache.NewMetrics(tel.Meter(), string(mode))
	if err != nil {
		return nil, nil, fmt.Errorf("cache metrics: %w", err)
	}
	rejections, err := upstream.NewRejectionMetrics(tel.Meter())
	if err != nil {
		return nil, nil, fmt.Errorf("mapping rejection metrics: %w", err)
	}
	client, err := upstream.NewClient(upstream.ClientConfig{
		BaseURL:        baseURL,
		Token:          cfg.PMSToken,
		Version:        version,
		CallTimeout:    cfg.PMSTimeout,
		AttemptTimeout: cfg.PMSAttempt,
		MaxWalkBytes:   cfg.PMSMaxWalkBytes,
		Tracer:         tel.Tracer(),
		Metrics:        pm,
		WrapTransport:  func(rt http.RoundTripper) http.RoundTripper { return tel.Transport(rt, upstream.ResendCount) },
		Logger:         log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("PMS client (%s): %w", mode, err)
	}
	direct := upstream.NewDirect(client, upstream.DirectOptions{
		Brand:      cfg.Brand,
		CodeSource: cfg.CodeSource,
		OnReject: func(r *mapping.Rejection) {
			rejections.Rejected(context.Background(), r.Reason)
			log.Warn("pms record rejected", "hotel_id", r.HotelID, "reason", string(r.Reason))
		},
	})
	cc := cache.Config{
		Key:         cfg.Brand + "/" + string(mode),
		TTL:         cfg.CacheTTL,
		Stale:       cfg.CacheStale,
		LoadTimeout: cfg.PMSTimeout,
		Logger:      log,
		Metrics:     cm,
	}
	if fm != nil { // loads shared through Redis (fleet.go)
		cc.Load = fm.loader(direct, mode, cfg.CacheTTL, cfg.PMSTimeout)
		cc.RefreshAhead = fleet.RefreshAhead
	}
	if sh != nil {
		load := cc.Load
		if load == nil {
			load = direct.Snapshot
		}
		cc.Load = sh.After(string(mode), load)
	}
	c := cache.New(direct, cc)
	return c, c.Close, nil
}

// reloadOnHangup re-reads the key file, and asks for the TLS pair to be
// re-read (a pending request is enough), on every SIGHUP until ctx is done.
func reloadOnHangup(ctx context.Context, store *keys.Store, tlsReload chan<- struct{}, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			log.Info("SIGHUP: reloading keys")
			_ = store.Reload() // Reload logs the outcome; old keys stay on failure
			select {
			case tlsReload <- struct{}{}:
			default:
			}
		}
	}
}

// bindListeners binds the public listener (EDGE_ADDR) and, unless
// EDGE_ADMIN_ADDR is empty, the admin one (nil otherwise). An error names
// the setting that could not be bound.
func bindListeners(cfg settings) (public, admin net.Listener, err error) {
	public, err = net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("EDGE_ADDR: cannot listen on %s: %w", cfg.Addr, err)
	}
	if cfg.AdminAddr == "" {
		return public, nil, nil
	}
	admin, err = net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		_ = public.Close()
		return nil, nil, fmt.Errorf("EDGE_ADMIN_ADDR: cannot listen on %s (set it empty or off to run without the admin listener): %w", cfg.AdminAddr, err)
	}
	return public, admin, nil
}

// serveAdmin serves /metrics, /debug/pprof/, /fleet (the Redis state,
// fleet.go) and /shadow (the candidate comparison, shadow.go) on ln (bound
// to EDGE_ADMIN_ADDR by bindListeners) until ctx is done.
// /debug/pprof/cmdline shows cmdline, the command line with its secrets
// redacted (redactArgs).
func serveAdmin(ctx context.Context, ln net.Listener, addr string, tel *observability.Telemetry, cmdline []string, fleetState, shadowState http.Handler, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.Handle("/", observability.AdminHandler(tel.MetricsHandler(), cmdline))
	mux.Handle("GET /fleet", fleetState)
	mux.Handle("GET /shadow", shadowState)
	err := listener.Serve(ctx, listener.ServeConfig{
		Addr:     addr,
		Listener: ln,
		Handler:  mux,
		// /debug/pprof/profile streams for 30 s by default.
		RequestTimeout: time.Minute,
		Logger:         log,
		OnListen:       func(a net.Addr) { log.Info("admin listening", "addr", a.String()) },
	})
	if err != nil {
		log.Error("admin listener stopped; metrics and pprof are off", "error", err)
	}
}

// stampedVersion is the version a release build stamps in
// (-ldflags "-X main.stampedVersion=v1.2.3", cmd/edge/image/build); empty:
// the module version from the build info, else "dev".
var stampedVersion string

func buildVersion() string {
	if stampedVersion != "" {
		return stampedVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

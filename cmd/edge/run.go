package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
)

// run is the whole program: main only supplies the process's context,
// arguments, environment and streams.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 1 && args[1] == "keys" {
		if len(args) > 2 && args[2] == "new" {
			if err := keys.RunNew(args[3:], stdout, stderr, rand.Reader); !errors.Is(err, flag.ErrHelp) {
				return err
			}
			return nil
		}
		return errors.New("usage: edge keys new --brand B --mode live|test [--properties id,id]")
	}
	cfg, err := parseSettings(args[1:], getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bad settings:\n%w", err)
	}
	log := newLogger(stderr, cfg)
	version := buildVersion()

	var wg sync.WaitGroup // every goroutine of run ends before run returns
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var demo *demoEnv
	if cfg.PMSBaseURL == "" {
		if demo, err = startDemo(ctx, &cfg, log); err != nil {
			return fmt.Errorf("start the demo: %w", err)
		}
		defer demo.close()
	}

	var draining atomic.Bool
	store, err := keys.Open(cfg.KeysFile, keys.Options{Logger: log})
	if err != nil {
		return fmt.Errorf("load EDGE_KEYS_FILE: %w", err)
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := store.Watch(ctx); err != nil && ctx.Err() == nil {
			log.Warn("key file watch stopped; SIGHUP still reloads", "error", err)
		}
	}()
	go func() { defer wg.Done(); reloadOnHangup(ctx, store, log) }()

	live, closeLive, err := newCatalog(cfg, cfg.PMSBaseURL, keys.ModeLive, version, log)
	if err != nil {
		return err
	}
	defer closeLive()
	var sandbox upstream.Catalog
	if cfg.PMSSandbox != "" {
		sb, closeSandbox, err := newCatalog(cfg, cfg.PMSSandbox, keys.ModeTest, version, log)
		if err != nil {
			return err
		}
		defer closeSandbox()
		sandbox = sb
	}

	handler := edge.NewServer(edge.Config{
		Brand:   cfg.Brand,
		DocsURL: cfg.DocsURL,
		Logger:  log,
		Healthy: func() bool { return !draining.Load() && store.Usable() },
	}, store, live, sandbox)

	log.Info("edge starting", "version", version, "addr", cfg.Addr, "brand", cfg.Brand,
		"demo", demo != nil, "sandbox", sandbox != nil, "tls", cfg.TLSCert != "")
	return edge.Serve(ctx, edge.ServeConfig{
		Addr:            cfg.Addr,
		Handler:         handler,
		TLSCertFile:     cfg.TLSCert,
		TLSKeyFile:      cfg.TLSKey,
		DrainDelay:      cfg.DrainDelay,
		ShutdownTimeout: cfg.ShutdownWait,
		OnDraining:      func() { draining.Store(true) },
		Logger:          log,
		OnListen: func(addr net.Addr) {
			log.Info("edge listening", "addr", addr.String())
			if demo != nil {
				demo.printBanner(stdout, addr, cfg.TLSCert != "")
			}
		},
	})
}

// newCatalog builds the PMS access of one mode: client (retries, breaker),
// mapping, cache.
func newCatalog(cfg settings, baseURL string, mode keys.Mode, version string, log *slog.Logger) (upstream.Catalog, func(), error) {
	log = log.With("pms", string(mode))
	client, err := upstream.NewClient(upstream.ClientConfig{
		BaseURL:        baseURL,
		Token:          cfg.PMSToken,
		Version:        version,
		CallTimeout:    cfg.PMSTimeout,
		AttemptTimeout: cfg.PMSAttempt,
		Logger:         log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("PMS client (%s): %w", mode, err)
	}
	direct := upstream.NewDirect(client, upstream.DirectOptions{
		Brand:      cfg.Brand,
		CodeSource: cfg.CodeSource,
		OnReject: func(r *mapping.Rejection) {
			log.Warn("pms record rejected", "hotel_id", r.HotelID, "reason", string(r.Reason))
		},
	})
	c := cache.New(direct, cache.Config{
		Key:         cfg.Brand + "/" + string(mode),
		TTL:         cfg.CacheTTL,
		Stale:       cfg.CacheStale,
		LoadTimeout: cfg.PMSTimeout,
		Logger:      log,
	})
	return c, c.Close, nil
}

// reloadOnHangup re-reads the key file on every SIGHUP until ctx is done.
func reloadOnHangup(ctx context.Context, store *keys.Store, log *slog.Logger) {
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
		}
	}
}

func newLogger(w io.Writer, cfg settings) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

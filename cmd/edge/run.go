package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/partner-edge/partner-edge/upstream/pms"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/listener"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/events"
	"github.com/partner-edge/partner-edge/upstream/shadow"
)

// run is the whole program: main only supplies the process's context,
// arguments, environment and streams. getenv is os.LookupEnv or its like:
// it tells a variable set to "" (EDGE_ADMIN_ADDR= disables the admin
// listener) from an unset one. It dispatches to the subcommand; without
// one, it serves (serveEdge).
func run(ctx context.Context, args []string, getenv lookupEnv, stdout, stderr io.Writer) error {
	sub := ""
	if len(args) > 1 {
		sub = args[1]
	}
	switch sub {
	case "docs":
		return runDocs(args[2:], getenv, stdout, stderr)
	case "keys":
		return runKeys(args[2:], getenv, stdout, stderr)
	case "webhooks":
		return runWebhooksCmd(ctx, args[2:], stdout, stderr)
	case "help":
		return runHelp(stdout)
	case "pms":
		if len(args) > 2 && args[2] == "check" {
			return runPMSCheck(ctx, args[3:], getenv, stdout, stderr)
		}
		return usageError("usage: edge pms check [--json] [--save FILE] [--baseline FILE] [--sandbox | --candidate]")
	}
	return serveEdge(ctx, args, getenv, stdout, stderr)
}

// newCatalog builds the PMS access of one mode: client (retries, breaker),
// mapping, cache, each reporting to telemetry; with a fleet member, the
// cache's loads are shared through Redis (fleet.go), and each load is
// handed to sh after it ends (nil: none; shadow.go), then to feed, the
// mode's events feed, which diffs each walk against the previous one.
func newCatalog(cfg settings, baseURL string, mode keys.Mode, version string, log *slog.Logger, tel *observability.Telemetry, fm *member, sh *shadow.Shadow, feed *events.Feed) (*cache.Cache, error) {
	cc := cache.Config{Key: cfg.Brand + "/" + string(mode), TTL: cfg.CacheTTL, Stale: cfg.CacheStale,
		LoadTimeout: cfg.PMSTimeout, WalkTimeout: cfg.PMSWalkTimeout, TokenSetting: "PMS_TOKEN", URLSetting: urlSetting[mode]}
	// A fleet's record of its last walk's length, or a single edge's kept
	// in EDGE_DATA_DIR: the Retry-After of a request that waits for this
	// process's first walk (docs/contract.md section 24).
	walks := fm.walkLengths()
	switch {
	case walks != nil:
		cc.LastWalk = walks.Last
	case feed != nil:
		cc.LastWalk = feed.LastWalk
	}
	return cache.NewPMS(cache.PMSConfig{
		Mode: string(mode),
		Client: pms.ClientConfig{BaseURL: baseURL, Token: cfg.PMSToken, Version: version,
			CallTimeout: cfg.PMSTimeout, WalkTimeout: cfg.PMSWalkTimeout, AttemptTimeout: cfg.PMSAttempt,
			MaxWalkBytes: cfg.PMSMaxWalkBytes, WalkAhead: true}, // partners wait for its first walk (upstream/pms/walk.go, fetchAhead)
		Direct:    pms.DirectOptions{Brand: cfg.Brand, CodeSource: cfg.CodeSource},
		Cache:     cc,
		Telemetry: tel,
		Log:       log,
		WrapLoad: func(d *pms.Direct) cache.Loader {
			load := fm.loader(d, mode, cfg, feed, walks) // nil without a fleet
			if load == nil {
				load = d.Snapshot
			}
			if sh != nil {
				load = sh.After(string(mode), load)
			}
			return feed.Watch(load)
		},
	})
}

// urlSetting names each mode's PMS address in the error of a PMS that
// cannot be reached (docs/contract.md section 22).
var urlSetting = map[keys.Mode]string{keys.ModeLive: "PMS_BASE_URL", keys.ModeTest: "PMS_SANDBOX_URL"}

// newFeed is the events feed of one mode (docs/contract.md sections 23
// and 25): the fleet's one feed in Redis with a member, else a single
// edge's in EDGE_DATA_DIR (kept; nil: none), else in this process's memory
// only. appended is called after events were added (webhooks' wake).
func newFeed(cfg settings, mode keys.Mode, log *slog.Logger, tel *observability.Telemetry, fm *member, kept events.Shared, appended func()) (*events.Feed, error) {
	shared, err := fm.events(mode, cfg)
	if err != nil {
		return nil, err
	}
	if shared == nil {
		shared = kept
	}
	return events.New(events.Config{Mode: string(mode), Retention: cfg.EventsRetention, Max: cfg.EventsMax,
		MaxBytes: cfg.EventsMaxBytes, Hold: cfg.ListHold, Shared: shared, Log: log.With("pms", string(mode)), Meter: tel.Meter(),
		Appended: appended})
}

// reloadOnHangup re-reads the key file, and asks for the TLS pair to be
// re-read (a pending request is enough), on every SIGHUP until ctx is done.
func reloadOnHangup(ctx context.Context, store *keys.Store, tlsReload chan<- struct{}) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	store.ReloadOn(ctx, hup, func() {
		select {
		case tlsReload <- struct{}{}:
		default:
		}
	})
}

// bindListeners binds the public listener (EDGE_ADDR) and, unless
// EDGE_ADMIN_ADDR is empty, the admin one (nil otherwise). An error names
// the setting that could not be bound.
func bindListeners(cfg settings) (public, admin net.Listener, err error) {
	if public, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, nil, fmt.Errorf("EDGE_ADDR: cannot listen on %s: %w", cfg.Addr, err)
	}
	if cfg.AdminAddr == "" {
		return public, nil, nil
	}
	if admin, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
		_ = public.Close()
		return nil, nil, fmt.Errorf("EDGE_ADMIN_ADDR: cannot listen on %s (set it empty or off to run without the admin listener): %w", cfg.AdminAddr, err)
	}
	return public, admin, nil
}

// adminParts are the admin listener's handlers beside metrics and pprof:
// /fleet (the Redis state, fleet.go), /shadow (the candidate comparison,
// shadow.go) and /readyz (readiness, serve.go).
type adminParts struct {
	fleet, shadow, ready http.Handler
}

// serveAdmin serves /metrics, /debug/pprof/, /readyz, /fleet and /shadow
// (adminParts) on ln (bound to EDGE_ADMIN_ADDR by bindListeners) until ctx
// is done. /debug/pprof/cmdline shows cmdline, the command line with its
// secrets redacted (settingval.RedactArgs).
func serveAdmin(ctx context.Context, ln net.Listener, addr string, tel *observability.Telemetry, cmdline []string, parts adminParts, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.Handle("/", observability.AdminHandler(tel.MetricsHandler(), cmdline))
	mux.Handle("GET /fleet", parts.fleet)
	mux.Handle("GET /shadow", parts.shadow)
	mux.Handle("GET /readyz", parts.ready)
	if err := listener.ServeAdmin(ctx, ln, addr, mux, log); err != nil {
		log.Error("admin listener stopped; metrics and pprof are off", "error", err)
	}
}

// stampedVersion is the version a release build stamps in
// (-ldflags "-X main.stampedVersion=v1.2.3", cmd/edge/image/build).
var stampedVersion string

// buildVersion is stampedVersion, else the module version from the build
// info, else "dev".
func buildVersion() string { return cmp.Or(stampedVersion, observability.ModuleVersion(), "dev") }

// runKeys is "edge keys ...": keys.Command, whose usage errors end the
// program with status 2.
func runKeys(args []string, getenv lookupEnv, stdout, stderr io.Writer) error {
	err := keys.Command(args, getenv, stdout, stderr)
	var ue *keys.UsageError
	if errors.As(err, &ue) {
		return &exitError{code: 2, err: ue.Err}
	}
	return err
}

// commandsUsage lists the program's commands: `edge help` prints it, and
// `edge --help` before the settings.
var commandsUsage = []string{
	"usage: edge [flags]         run the edge (no settings: the demo); settings: edge --help",
	"       edge keys COMMAND    manage the key file: add, list, suspend, resume, revoke,",
	"                            rotate, check, new (edge keys --help)",
	"       edge docs build DIR  write the documentation site (edge docs build --help)",
	"       edge pms check ...   check a PMS against docs/pms-api.md (edge pms check --help)",
	"       edge webhooks receive --secret whsec_... [--addr HOST:PORT]",
	"                            receive webhook deliveries, verify and print them",
	"       edge help            this text",
}

// runHelp is "edge help": the commands, and where their flags are told.
func runHelp(stdout io.Writer) error {
	_, err := fmt.Fprintln(stdout, strings.Join(commandsUsage, "\n"))
	return err
}

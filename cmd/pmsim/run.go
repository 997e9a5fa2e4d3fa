package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// shutdownGrace bounds how long in-flight requests may finish after ctx ends.
const shutdownGrace = 5 * time.Second

// run parses args, serves the simulator until ctx ends, then shuts down
// gracefully. The first line on stdout is "pmsim listening on <URL>", with
// the real port when --addr asks for port 0.
//
// It is traced like the edge (pmsim.Instrument), as service "pmsim"
// whatever OTEL_SERVICE_NAME says, so that the two stay apart; it exports
// no metrics (the edge's instruments, all zero, would only add noise).
func run(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) (err error) {
	getenv := func(k string) string { v, _ := lookupEnv(k); return v }
	var (
		cfg              pmsim.Config
		faults           pmsim.Faults
		addr             string
		renames, retypes string
	)
	name := "pmsim"
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&addr, "addr", "127.0.0.1:9000", "listen address (port 0 picks a free port)")
	fs.IntVar(&cfg.Brands, "brands", 3, `number of brands: "aurora", "borealis", "cascade", ...`)
	fs.IntVar(&cfg.HotelsPerBrand, "hotels", 40, "hotels per brand (one in eight unmappable)")
	fs.Int64Var(&cfg.Seed, "seed", 0, "seed of the data and of the fault randomness")
	fs.IntVar(&cfg.PageSize, "page-size", 0, "cap on hotels per list page whatever the limit (0: none)")
	fs.BoolVar(&cfg.ShuffleEachWalk, "shuffle", false, "serve each list walk in a new order")
	fs.StringVar(&cfg.Token, "token", "", "bearer token required of clients (default: $PMS_TOKEN; empty: none)")
	fs.DurationVar(&faults.Latency, "latency", 0, "fault: delay added to every request")
	fs.DurationVar(&faults.Jitter, "jitter", 0, "fault: random extra delay, up to this much")
	fs.Float64Var(&faults.ErrorRate, "error-rate", 0, "fault: share of requests that fail, 0..1 (0 with a failure mode set: all)")
	fs.IntVar(&faults.FailFirst, "fail-first", 0, "fault: fail only the first N requests")
	fs.IntVar(&faults.ErrorStatus, "error-status", 0, "fault: status of failed requests (default 500 when --error-rate is set)")
	fs.StringVar(&faults.RetryAfter, "retry-after", "", "fault: Retry-After header sent with --error-status answers")
	fs.BoolVar(&faults.Reset, "reset", false, "fault: reset the connection mid-body")
	fs.BoolVar(&faults.Truncate, "truncate", false, "fault: send half the body, then close")
	fs.BoolVar(&faults.Malformed, "malformed", false, "fault: answer 200 with a non-JSON body")
	fs.Int64Var(&faults.OversizeBytes, "oversize", 0, "fault: pad bodies with white space past this many bytes")
	fs.StringVar(&renames, "rename", "", "drift: rename record fields, e.g. display_name=name (comma-separated pairs)")
	fs.StringVar(&retypes, "retype", "", "drift: change the JSON type of these record fields, e.g. last_modified_ms (comma-separated)")
	fs.IntVar(&cfg.Drift.Drop, "drop", 0, "drift: leave out this many mappable records of every brand")
	fs.DurationVar(&cfg.Churn, "churn", 0, "change data every interval while serving: per brand, rename a hotel, change one's status, replace one by a new hotel (0: never)")
	fs.StringVar(&cfg.Drift.Paging, "break-paging", "", "drift: break list paging: loop, empty-cursor, overlap or rename-cursor (pages of 10 unless --page-size)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	tokenSet := false
	fs.Visit(func(f *flag.Flag) { tokenSet = tokenSet || f.Name == "token" })
	if !tokenSet {
		cfg.Token = getenv("PMS_TOKEN") // not a flag default: --help would print it
	}
	if cfg.Drift.Rename, err = pmsim.ParseRenames(renames); err != nil {
		return fmt.Errorf("--rename: %w", err)
	}
	for f := range strings.SplitSeq(retypes, ",") {
		if f = strings.TrimSpace(f); f != "" {
			cfg.Drift.Retype = append(cfg.Drift.Retype, f)
		}
	}
	if err := validate(cfg, faults, fs.NArg()); err != nil {
		return err
	}
	if err := cfg.Drift.Validate(); err != nil {
		return err
	}

	telEnv := func(k string) string {
		if k == "OTEL_METRICS_EXPORTER" {
			return "none"
		}
		return getenv(k)
	}
	tel, err := observability.New(ctx, observability.Config{ServiceName: "pmsim", Getenv: telEnv})
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if terr := tel.Shutdown(sctx); terr != nil && err == nil {
			err = fmt.Errorf("telemetry shutdown: %w", terr)
		}
	}()

	sim := pmsim.New(cfg)
	sim.SetFaults(faults)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	srv := &http.Server{Handler: pmsim.Instrument(sim, tel), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "pmsim listening on http://%s\n", ln.Addr())
	// The hint works as printed: with a token (--token or PMS_TOKEN), the
	// curl sends it, or the simulator would answer it 401.
	auth := ""
	if cfg.Token != "" {
		auth = fmt.Sprintf("-H 'Authorization: Bearer %s' ", cfg.Token)
	}
	fmt.Fprintf(stdout, "brands %v, %d hotels each, seed %d; try: curl %s'http://%s/internal/v2/brands/%s/hotels?limit=2'\n",
		sim.Brands(), cfg.HotelsPerBrand, cfg.Seed, auth, ln.Addr(), sim.Brands()[0])
	fmt.Fprintf(stdout, "traces exporter: %s\n", tel.TracesExporter())
	if cfg.Churn > 0 {
		fmt.Fprintf(stdout, "churn: every %s, per brand a rename, a status change and a hotel replaced\n", cfg.Churn)
	}
	if d := cfg.Drift; len(d.Rename) > 0 || len(d.Retype) > 0 || d.Drop > 0 || d.Paging != "" {
		fmt.Fprintf(stdout, "drift: rename %v, retype %v, drop %d, paging %q\n", d.Rename, d.Retype, d.Drop, d.Paging)
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(stdout, "pmsim stopped")
	return nil
}

func validate(cfg pmsim.Config, f pmsim.Faults, extra int) error {
	switch {
	case extra > 0:
		return errors.New("unexpected arguments after the flags")
	case cfg.Brands < 1:
		return fmt.Errorf("--brands %d: want at least 1", cfg.Brands)
	case cfg.HotelsPerBrand < 1:
		return fmt.Errorf("--hotels %d: want at least 1", cfg.HotelsPerBrand)
	case cfg.PageSize < 0:
		return fmt.Errorf("--page-size %d: want 0 or more", cfg.PageSize)
	case cfg.Churn < 0:
		return fmt.Errorf("--churn %s: want 0 or more", cfg.Churn)
	case f.Latency < 0 || f.Jitter < 0:
		return errors.New("--latency and --jitter must not be negative")
	case f.ErrorRate < 0 || f.ErrorRate > 1:
		return fmt.Errorf("--error-rate %v: want 0..1", f.ErrorRate)
	case f.FailFirst < 0:
		return fmt.Errorf("--fail-first %d: want 0 or more", f.FailFirst)
	case f.ErrorStatus != 0 && (f.ErrorStatus < 400 || f.ErrorStatus > 599):
		return fmt.Errorf("--error-status %d: want 400..599", f.ErrorStatus)
	case f.OversizeBytes < 0:
		return fmt.Errorf("--oversize %d: want 0 or more", f.OversizeBytes)
	}
	return nil
}

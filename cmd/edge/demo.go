package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// demoEnv is the demo's embedded world: a live and a sandbox simulator on
// loopback and a key file of demo keys in a temporary directory.
type demoEnv struct {
	liveKey, testKey string
	docsURL          string   // its own documentation site, once it listens; empty: not served
	stops            []func() // the simulators' servers
	dir              string
	webhooks         bool                     // delivering to loopback over http (webhooks.go): the banner shows how
	tel              *observability.Telemetry // the simulators' own, as service "pmsim"
}

// startDemo starts the simulators and points cfg at them, with demo keys
// minted into a key file of its own (the demo takes none of the operator's:
// checkDemo, docs/contract.md section 21).
func startDemo(ctx context.Context, cfg *settings, getenv func(string) string, log *slog.Logger) (_ *demoEnv, err error) {
	d := &demoEnv{} // cfg has the demo's defaults (demoDefaults)
	if d.tel, err = observability.New(ctx, observability.Config{ServiceName: "pmsim", Getenv: getenv}); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	live := pmsim.DemoLive
	live.Churn = demoChurn // the events feed has something to show
	if cfg.PMSBaseURL, err = d.serveSim(pmsim.New(live)); err != nil {
		return nil, err
	}
	if cfg.PMSSandbox, err = d.serveSim(pmsim.New(pmsim.DemoSandbox)); err != nil {
		return nil, err
	}
	if d.dir, err = os.MkdirTemp("", "partner-edge-demo-"); err != nil {
		return nil, err
	}
	cfg.KeysFile = filepath.Join(d.dir, "keys.json")
	if d.liveKey, d.testKey, err = keys.WriteDemoFile(cfg.KeysFile, cfg.Brand, rand.Reader); err != nil {
		return nil, err
	}
	log.Info("demo started", "live_pms", cfg.PMSBaseURL, "sandbox_pms", cfg.PMSSandbox, "keys_file", cfg.KeysFile)
	return d, nil
}

// demoChurn is how often the demo's live PMS changes a few hotels (a
// rename, a status change, a hotel replaced: pmsim.Config.Churn), so that
// GET /v1/events has changes to show.
const demoChurn = time.Minute

// demoReceiver is where the banner's receiver listens (edge webhooks
// receive): loopback, which the demo's deliveries may reach.
const demoReceiver = "127.0.0.1:8090"

// demoAddr is where the demo listens unless EDGE_ADDR says otherwise: on
// loopback only, as its keys are printed on the terminal and work for
// anyone who can reach the port (docs/contract.md section 18).
const demoAddr = "127.0.0.1:8080"

// demoDefaults fills in what the demo defaults differently from a
// deployment: the brand and the listen address.
func demoDefaults(cfg *settings) {
	if cfg.Brand == "" {
		cfg.Brand = pmsim.DemoBrand
	}
	if !cfg.AddrSet {
		cfg.Addr = demoAddr
	}
}

func (d *demoEnv) serveSim(sim *pmsim.Sim) (url string, err error) {
	url, stop, err := pmsim.ServeLoopback(pmsim.Instrument(sim, d.tel))
	if err == nil {
		d.stops = append(d.stops, stop)
	}
	return url, err
}

func (d *demoEnv) close() {
	for _, stop := range d.stops {
		stop()
	}
	if d.dir != "" {
		_ = os.RemoveAll(d.dir)
	}
	if d.tel != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = d.tel.Shutdown(ctx)
		cancel()
	}
}

// printBanner tells a person how to call the demo: the URL, the keys, and a
// curl line that works when pasted.
func (d *demoEnv) printBanner(w io.Writer, addr net.Addr, tls bool) {
	base := demoOrigin(addr, tls) + "/v1/"
	fmt.Fprintf(w, "partner-edge demo: the Partner API v1 in front of an embedded PMS simulator\n\n")
	fmt.Fprintf(w, "  URL:       %s\n", base)
	if d.docsURL != "" {
		fmt.Fprintf(w, "  docs:      %s/\n", d.docsURL)
	}
	if d.liveKey != "" {
		fmt.Fprintf(w, "  live key:  %s\n", d.liveKey)
		fmt.Fprintf(w, "  test key:  %s\n\n", d.testKey)
		fmt.Fprintf(w, "Try:\n  curl -H 'Authorization: Bearer %s' %sproperties\n", d.liveKey, base)
		fmt.Fprintf(w, "  curl -H 'Authorization: Bearer %s' %sevents\n", d.liveKey, base)
		fmt.Fprintf(w, "  (the live PMS changes a few hotels every %s: follow the changes with\n   events?after= and the meta.events.next of the list, then of each answer)\n\n", demoChurn)
		if d.webhooks {
			fmt.Fprintf(w, "Webhooks (the demo delivers to loopback over http): create an endpoint, then\nrun a receiver with the secret its answer holds (data.secret, shown once):\n")
			fmt.Fprintf(w, "  curl -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \\\n    -d '{\"url\": \"http://%s/hooks\"}' %swebhook-endpoints\n", d.liveKey, demoReceiver, base)
			fmt.Fprintf(w, "  go run ./cmd/edge webhooks receive --addr %s --secret whsec_...\n", demoReceiver)
			fmt.Fprintf(w, "  (each change arrives signed, once; a failed delivery is tried again after 5 s)\n\n")
		}
	}
	fmt.Fprintf(w, "Stop with Ctrl-C.\n")
}

// demoOrigin is the scheme, host and port a person on this machine reaches
// the demo at: localhost for a loopback or unspecified address.
func demoOrigin(addr net.Addr, tls bool) string {
	host, port := "localhost", "0"
	if ta, ok := addr.(*net.TCPAddr); ok {
		if !ta.IP.IsUnspecified() && !ta.IP.IsLoopback() {
			host = ta.IP.String()
		}
		port = fmt.Sprint(ta.Port)
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

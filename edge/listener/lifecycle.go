// Package listener serves an http.Handler on a TCP port: the lifecycle
// (listen, drain, graceful shutdown), TLS (policy, certificate loading and
// reloading on file change or SIGHUP, HSTS), the head gate that makes
// oversized request heads take turns, and net/http's own error log. Both
// of cmd/edge's listeners (the partner API and the admin port) use it; it
// knows nothing of the API.
package listener

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"time"
)

// Defaults of ServeConfig.
const (
	DefaultReadHeaderTimeout = 5 * time.Second
	// defaultRequestTimeout is edge.DefaultRequestTimeout; cmd/edge always passes its setting.
	defaultRequestTimeout = 10 * time.Second
	// writeMargin lets an answer given at the request deadline (a 504) still be written.
	writeMargin = 5 * time.Second
)

// ServeConfig configures Serve.
type ServeConfig struct {
	// Addr is the listen address, e.g. ":8080"; port 0 picks a free port.
	Addr string
	// Listener, when set, is served instead of listening on Addr (which
	// then only names it in errors and logs): a caller that binds before
	// it starts anything else fails early, naming its setting. Serve
	// closes it. Nil: Serve listens on Addr.
	Listener net.Listener
	Handler  http.Handler
	// TLSCertFile and TLSKeyFile, when both set, serve HTTPS with HTTP/2:
	// TLS 1.2 with AEAD suites only, or TLS 1.3, and Strict-Transport-Security
	// on every answer. The pair is reloaded without a restart when the files
	// change and on every value from TLSReload; a bad new pair is logged and
	// the old one kept. Setting only one is an error.
	TLSCertFile, TLSKeyFile string
	// TLSReload, when TLS is on, re-reads the certificate files on every
	// value received (cmd/edge sends one on SIGHUP). Nil: file changes only.
	TLSReload <-chan struct{}
	// RequestTimeout is the handler's overall request deadline (enforced by
	// the handler: Config.RequestTimeout); the server's WriteTimeout is set
	// to it plus 5 s, so an answer given at the deadline can still be
	// written. Zero means 10 s.
	RequestTimeout time.Duration
	// ReadHeaderTimeout bounds reading a request's headers (slowloris).
	// HTTP/2 connections get the same bound on silence: a connection that
	// sends no frame for half of it is pinged, and closed when the ping is
	// not answered within the other half. Zero means 5 s.
	ReadHeaderTimeout time.Duration
	// DrainDelay is how long, once ctx is done, the server keeps serving
	// while OnDraining has turned health to 503, so load balancers stop
	// sending before connections close. Zero shuts down at once.
	DrainDelay time.Duration
	// ShutdownTimeout bounds the wait for in-flight requests after the
	// drain delay. Zero means 15 s.
	ShutdownTimeout time.Duration
	// OnTLSReload is called after each reload of the TLS pair after
	// start-up, with whether the new pair was taken. Nil: nothing.
	OnTLSReload func(ok bool)
	// OnDraining is called once when shutdown begins. Nil: nothing.
	OnDraining func()
	// OnListen is called with the bound address before serving. Nil: nothing.
	OnListen func(net.Addr)
	// Logger receives lifecycle lines, certificate reloads, and net/http's
	// own errors (at warn, at most 10 a minute). Nil discards.
	Logger *slog.Logger

	// tlsSettle, when set (tests only: a tiny one), replaces the certificate
	// watch's settling delay; zero: dirwatch.DefaultSettle.
	tlsSettle time.Duration
	// onTLSLoad, when set (tests only), is called after every attempt to
	// load the certificate files, changed or not.
	onTLSLoad func()
	// headSlots, when set (tests only), is given before serving a count of
	// the head gate's slots held, so that a test waits for stalled heads
	// to hold them rather than for the clock.
	headSlots func(held func() int)
}

// Serve listens and serves until ctx is done, then drains and shuts down
// gracefully. It returns nil after a clean shutdown. Connections reading
// an oversized request head (over 8 KB) take turns, GOMAXPROCS at a time,
// so that a flood of them cannot starve health checks (headGate).
func Serve(ctx context.Context, cfg ServeConfig) error {
	if cfg.Listener != nil { // closed on every return; a second Close is harmless
		defer func() { _ = cfg.Listener.Close() }()
	}
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return errors.New("TLS needs both a certificate and a key")
	}
	cfg = cfg.withDefaults()
	srv := newHTTPServer(cfg)
	var certs *certStore
	if cfg.TLSCertFile != "" {
		var err error
		if certs, err = newCertStore(cfg); err != nil {
			return err
		}
		srv.TLSConfig = newTLSConfig(certs.getCertificate)
		srv.Handler = hsts(srv.Handler)
	}
	ln := cfg.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Addr); err != nil {
			return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
		}
	}
	gate := newHeadGate(runtime.GOMAXPROCS(0), bigHead)
	if cfg.headSlots != nil {
		cfg.headSlots(func() int { return len(gate.slots) })
	}
	ln = gate.listener(ln)
	if cfg.OnListen != nil {
		cfg.OnListen(ln.Addr())
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if certs != nil {
		wg.Add(1)
		go func() { defer wg.Done(); certs.watch(wctx, cfg.TLSReload) }()
	}
	errc := make(chan error, 1)
	go func() {
		if certs != nil {
			errc <- srv.ServeTLS(ln, "", "") // the certificate comes from TLSConfig
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("serve on %s: %w", cfg.Addr, err)
	case <-ctx.Done():
	}
	cfg.Logger.Info("shutdown begun", "addr", ln.Addr().String(), "drain_delay", cfg.DrainDelay)
	if cfg.OnDraining != nil {
		cfg.OnDraining()
	}
	if cfg.DrainDelay > 0 {
		select {
		case <-time.After(cfg.DrainDelay):
		case err := <-errc:
			return fmt.Errorf("serve on %s: %w", cfg.Addr, err)
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		<-errc
		return fmt.Errorf("shutdown of %s: %w", cfg.Addr, err)
	}
	<-errc // http.ErrServerClosed
	cfg.Logger.Info("shutdown complete", "addr", ln.Addr().String())
	return nil
}

// withDefaults gives zero or negative durations and a nil Logger their defaults.
func (cfg ServeConfig) withDefaults() ServeConfig {
	cfg.ShutdownTimeout = cmp.Or(max(cfg.ShutdownTimeout, 0), 15*time.Second)
	cfg.RequestTimeout = cmp.Or(max(cfg.RequestTimeout, 0), defaultRequestTimeout)
	cfg.ReadHeaderTimeout = cmp.Or(max(cfg.ReadHeaderTimeout, 0), DefaultReadHeaderTimeout)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// newHTTPServer bounds what slow, idle or hostile clients can hold: reading
// the head (431 beyond MaxHeaderBytes) and the request, writing, idleness,
// and on HTTP/2 a silent connection or a peer that stops reading.
func newHTTPServer(cfg ServeConfig) *http.Server {
	rht := cfg.ReadHeaderTimeout
	return &http.Server{
		Handler:           releaseHead(cfg.Handler),
		ReadHeaderTimeout: rht,
		ReadTimeout:       2 * rht,
		WriteTimeout:      cfg.RequestTimeout + writeMargin,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout:  rht / 2,
			PingTimeout:      rht - rht/2,
			WriteByteTimeout: 2 * rht,
		},
		ErrorLog:    newErrorLog(cfg.Logger, time.Now),
		ConnContext: gateConnContext, // with Serve's headGate listener
	}
}

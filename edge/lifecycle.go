package edge

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ServeConfig configures Serve.
type ServeConfig struct {
	// Addr is the listen address, e.g. ":8080"; port 0 picks a free port.
	Addr    string
	Handler http.Handler
	// TLSCertFile and TLSKeyFile, when both set, serve HTTPS with HTTP/2.
	// Setting only one is an error.
	TLSCertFile, TLSKeyFile string
	// DrainDelay is how long, once ctx is done, the server keeps serving
	// while OnDraining has turned health to 503, so load balancers stop
	// sending before connections close. Zero shuts down at once.
	DrainDelay time.Duration
	// ShutdownTimeout bounds the wait for in-flight requests after the
	// drain delay. Zero means 15 s.
	ShutdownTimeout time.Duration
	// OnDraining is called once when shutdown begins. Nil: nothing.
	OnDraining func()
	// OnListen is called with the bound address before serving. Nil: nothing.
	OnListen func(net.Addr)
	// Logger receives lifecycle lines and net/http's own errors. Nil discards.
	Logger *slog.Logger
}

// Serve listens and serves until ctx is done, then drains and shuts down
// gracefully. It returns nil after a clean shutdown.
func Serve(ctx context.Context, cfg ServeConfig) error {
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return errors.New("TLS needs both a certificate and a key")
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 15 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv := &http.Server{
		Handler: cfg.Handler,
		// Bounds on slow or idle clients. WriteTimeout must exceed the
		// PMS deadline, or slow loads would be cut before their 504.
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12},
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	if cfg.OnListen != nil {
		cfg.OnListen(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() {
		if cfg.TLSCertFile != "" {
			errc <- srv.ServeTLS(ln, cfg.TLSCertFile, cfg.TLSKeyFile)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return fmt.Errorf("serve on %s: %w", cfg.Addr, err)
	case <-ctx.Done():
	}
	log.Info("shutdown begun", "addr", ln.Addr().String(), "drain_delay", cfg.DrainDelay)
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
		return fmt.Errorf("shutdown of %s: %w", cfg.Addr, err)
	}
	<-errc // http.ErrServerClosed
	log.Info("shutdown complete", "addr", ln.Addr().String())
	return nil
}

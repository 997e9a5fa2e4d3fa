package pmsim

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// The demo's dataset (README.md), one definition for the demo and for
// `edge pms check` without PMS_BASE_URL, which checks the same data the
// demo serves.
var (
	// DemoLive is the demo's live PMS.
	DemoLive = Config{Seed: 1}
	// DemoSandbox is the demo's sandbox PMS (svc_test_ keys): other data,
	// by design.
	DemoSandbox = Config{Seed: 2, HotelsPerBrand: 12}
)

// DemoBrand is the brand the demo serves when EDGE_BRAND is unset (the
// first generated brand).
const DemoBrand = "aurora"

// ServeLoopback serves h on a port of 127.0.0.1 chosen by the kernel and
// returns its base URL and the function that stops it: a graceful
// shutdown bounded by 2 s, then a close, returning once the server has
// stopped.
func ServeLoopback(h http.Handler) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = srv.Close()
		}
		<-done
	}
	return "http://" + ln.Addr().String(), stop, nil
}

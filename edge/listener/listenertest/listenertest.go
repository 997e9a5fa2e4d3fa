// Package listenertest runs listener.Serve for tests: the edge as deployed
// (its timeouts, TLS policy and head gate) on a port the kernel chooses.
// Imported by _test.go files only.
package listenertest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/listener"
)

// Serve runs listener.Serve with cfg on 127.0.0.1:0 in the background until
// ctx ends, and returns the address it listens on and the channel that gets
// Serve's result. It fails t when Serve returns or has not listened within
// 10 s.
func Serve(t testing.TB, ctx context.Context, cfg listener.ServeConfig) (string, chan error) {
	t.Helper()
	addrc := make(chan string, 1)
	cfg.Addr = "127.0.0.1:0"
	cfg.OnListen = func(a net.Addr) { addrc <- a.String() }
	done := make(chan error, 1)
	go func() { done <- listener.Serve(ctx, cfg) }()
	select {
	case a := <-addrc:
		return a, done
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(10 * time.Second): // the outside event: the listener binding a port
		t.Fatal("serve never listened")
	}
	return "", nil
}

package edge_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/listener"
)

// serve runs listener.Serve (the edge as deployed: its timeouts and head
// gate) in the background and returns its address.
func serve(t testing.TB, ctx context.Context, cfg listener.ServeConfig) (string, chan error) {
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

// get fetches url and returns its status and body (status 0 and the error
// when the request failed).
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

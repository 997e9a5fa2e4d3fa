package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
)

// testSecret is the fleet secret of the tests' stores.
var testSecret = []byte("fleet-test-secret-of-32-bytes-ok")

// newTestClient is a client of the Redis at url with a quick guard (500 ms
// calls, 50 ms open), closed when t ends; tl and log may be nil.
func newTestClient(t *testing.T, url string, tl *testkit.Telemetry, log *testkit.LogBuffer) *redisconn.Client {
	t.Helper()
	cfg := redisconn.Config{URL: url, Guard: redisconn.GuardConfig{CallTimeout: 500 * time.Millisecond, OpenTimeout: 50 * time.Millisecond}}
	if tl != nil {
		cfg.Meter, cfg.Tracer = tl.Meter, tl.TracerProvider
	}
	if log != nil {
		cfg.Log = log.Logger()
	}
	c, err := redisconn.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newConfigClient is a client of cfg with a guard whose calls leave room
// for a TLS handshake under -race on a busy machine (5 s, 50 ms open),
// closed when t ends.
func newConfigClient(t *testing.T, cfg redisconn.Config) *redisconn.Client {
	t.Helper()
	cfg.Guard = redisconn.GuardConfig{CallTimeout: 5 * time.Second, OpenTimeout: 50 * time.Millisecond}
	c, err := redisconn.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// watchClient runs c's health probe every every, as the edge does, until
// the test ends: it alone finds Redis back once the breaker has opened.
func watchClient(t *testing.T, c *redisconn.Client, every time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Watch(ctx, every) }()
	t.Cleanup(func() { cancel(); <-done })
}

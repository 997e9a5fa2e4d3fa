package fleet

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/upstream/fleet/redistest"
)

// form is one of the forms of Redis a test runs against (docs/contract.md section 16).
type form struct {
	// client is a new guarded client: one instance of the fleet.
	client func(t *testing.T) *Client
	// raw is an unguarded client of the same Redis, for forging state.
	raw func(t *testing.T) redis.UniversalClient
}

// eachForm runs fn against one primary and against a Cluster of three
// primaries: what the fleet shares must work the same on both, every
// script's keys in one slot.
func eachForm(t *testing.T, fn func(t *testing.T, f form)) {
	t.Run("primary", func(t *testing.T) {
		srv := redistest.Start(t)
		fn(t, form{
			client: func(t *testing.T) *Client { return newConfigClient(t, Config{URL: srv.URL()}) },
			raw: func(t *testing.T) redis.UniversalClient {
				rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
				t.Cleanup(func() { _ = rdb.Close() })
				return rdb
			},
		})
	})
	t.Run("cluster", func(t *testing.T) {
		c := redistest.StartCluster(t)
		fn(t, form{
			client: func(t *testing.T) *Client { return newConfigClient(t, Config{Cluster: c.Nodes}) },
			raw: func(t *testing.T) redis.UniversalClient {
				rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Nodes})
				t.Cleanup(func() { _ = rdb.Close() })
				return rdb
			},
		})
	})
}

// newConfigClient is a client of cfg with the tests' guard (5 s calls,
// 50 ms open), closed when t ends. Its callers' failures are all quick
// refusals (an untrusted certificate, WRONGPASS), never timeouts: the
// call's deadline leaves room for a TLS handshake under -race on a busy
// machine, which outlasted 500 ms and turned a trust failure into a timeout.
func newConfigClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	cfg.Guard = GuardConfig{CallTimeout: 5 * time.Second, OpenTimeout: 50 * time.Millisecond}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

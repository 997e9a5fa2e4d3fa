package fleet

import (
	"testing"

	"github.com/partner-edge/partner-edge/upstream/redisconn"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// form is one of the forms of Redis a test runs against (docs/contract.md section 16).
type form struct {
	// client is a new guarded client: one instance of the fleet.
	client func(t *testing.T) *redisconn.Client
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
			client: func(t *testing.T) *redisconn.Client { return newConfigClient(t, redisconn.Config{URL: srv.URL()}) },
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
			client: func(t *testing.T) *redisconn.Client { return newConfigClient(t, redisconn.Config{Cluster: c.Nodes}) },
			raw: func(t *testing.T) redis.UniversalClient {
				rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Nodes})
				t.Cleanup(func() { _ = rdb.Close() })
				return rdb
			},
		})
	})
}

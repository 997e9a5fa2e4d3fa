package redishooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
	"github.com/partner-edge/partner-edge/upstream/webhooks/webhookstest"
)

var secret = []byte("a-fleet-secret-of-the-tests-0123")

// form is one Redis the tests run against: a fleet client's settings, a
// raw client of the same Redis (for forging and looking) and a fresh
// brand per store, so that the cases share one server.
type form struct {
	cfg    redisconn.Config
	raw    redis.UniversalClient
	brands *atomic.Int64
}

// TestRedis runs every test of the package on one primary and on a Redis
// Cluster of three primaries (where every key one script touches must
// share a slot), each started once. What the scripts decide is the same
// on the other forms (Sentinel, TLS), which reach one primary as the
// first form does: redisevents' protocol tests prove the client on each.
// Without redis-server the test skips, or fails under CI=true.
func TestRedis(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, f form)
	}{
		{"Contract", testContract},
		{"ForgedRefused", testForged},
		{"SecretSealed", testSecretSealed},
		{"LeaseOneHolder", testLeaseOneHolder},
		{"LeaseExpires", testLeaseExpires},
		{"FleetDeliversOnce", testFleet},
	}
	each := func(t *testing.T, f form) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) { tc.run(t, f) })
		}
	}
	t.Run("primary", func(t *testing.T) {
		srv := redistest.Start(t)
		raw := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { _ = raw.Close() })
		each(t, form{cfg: redisconn.Config{URL: srv.URL()}, raw: raw, brands: new(atomic.Int64)})
	})
	if testing.Short() {
		return
	}
	t.Run("cluster", func(t *testing.T) {
		c := redistest.StartCluster(t)
		raw := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Nodes})
		t.Cleanup(func() { _ = raw.Close() })
		each(t, form{cfg: redisconn.Config{Cluster: c.Nodes}, raw: raw, brands: new(atomic.Int64)})
	})
}

// client is one member's guarded client of f.
func (f form) client(t *testing.T) *redisconn.Client {
	t.Helper()
	cfg := f.cfg
	cfg.Guard = redisconn.GuardConfig{CallTimeout: 5 * time.Second} // a busy machine, -race
	c, err := redisconn.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// brand is a brand no other store of the run uses.
func (f form) brand() string { return fmt.Sprintf("brand-%d", f.brands.Add(1)) }

func (f form) store(t *testing.T, brand string, key []byte) *Store {
	t.Helper()
	s, err := New(Config{Client: f.client(t), Secret: key, Brand: brand})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testContract: the store answers as every store must, each case on a
// brand of its own, through two members' clients (the writes of one are
// the reads of the other).
func testContract(t *testing.T, f form) {
	webhookstest.StoreContract(t, func(t *testing.T) webhooks.Registry {
		brand := f.brand()
		return twoMembers{f.store(t, brand, secret), f.store(t, brand, secret)}
	})
}

// twoMembers reads through one member's store and writes through the
// other's.
type twoMembers struct{ read, write *Store }

func (m twoMembers) Endpoints(ctx context.Context) ([]webhooks.Endpoint, error) {
	return m.read.Endpoints(ctx)
}
func (m twoMembers) Endpoint(ctx context.Context, id string) (webhooks.Endpoint, error) {
	return m.read.Endpoint(ctx, id)
}
func (m twoMembers) List(ctx context.Context, key string) ([]webhooks.Endpoint, error) {
	return m.read.List(ctx, key)
}
func (m twoMembers) SetProgress(ctx context.Context, id, from string, p webhooks.Progress) error {
	return m.write.SetProgress(ctx, id, from, p)
}
func (m twoMembers) Disable(ctx context.Context, id, from, reason string, at time.Time) error {
	return m.write.Disable(ctx, id, from, reason, at)
}
func (m twoMembers) Create(ctx context.Context, ep webhooks.Endpoint) error {
	return m.write.Create(ctx, ep)
}
func (m twoMembers) Delete(ctx context.Context, id string) error { return m.write.Delete(ctx, id) }
func (m twoMembers) Enable(ctx context.Context, id, after string) (webhooks.Endpoint, error) {
	return m.write.Enable(ctx, id, after)
}

var _ webhooks.Registry = twoMembers{}

// testForged: a value that does not verify (unsigned, signed with
// another secret, another endpoint's or another brand's moved over it,
// damaged) is never used nor written over: every call that would read
// it fails with ErrForged and Redis keeps what it held. Deleting the
// endpoint removes it.
func testForged(t *testing.T, f form) {
	ctx := context.Background()
	brand := f.brand()
	s := f.store(t, brand, secret)
	a, b := webhookstest.Endpoint("key_a", 1), webhookstest.Endpoint("key_a", 2)
	for _, ep := range []webhooks.Endpoint{a, b} {
		if err := s.Create(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	other := f.store(t, f.brand(), secret)
	if err := other.Create(ctx, a); err != nil {
		t.Fatal(err)
	}
	enabled, _ := s.encode(1, &a)
	_, body, _ := cut(enabled)
	stranger := f.store(t, brand, []byte("another-secret-not-the-fleets-01"))
	signedElsewhere, _ := stranger.encode(1, &a)
	otherBrands := f.raw.HGet(ctx, other.hash, a.ID).Val()
	bs := f.raw.HGet(ctx, s.hash, b.ID).Val()
	for name, forged := range map[string]string{
		"unsigned":           body,
		"another secret":     signedElsewhere,
		"another endpoint's": bs,
		"another brand's":    otherBrands,
		"damaged":            enabled[:len(enabled)-2],
		"empty":              "",
	} {
		if err := f.raw.HSet(ctx, s.hash, a.ID, forged).Err(); err != nil {
			t.Fatal(err)
		}
		refused := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, ErrForged) {
				t.Errorf("%s, %s: %v, want ErrForged", name, what, err)
			}
		}
		_, err := s.Endpoint(ctx, a.ID)
		refused("Endpoint", err)
		_, err = s.Endpoints(ctx)
		refused("Endpoints", err)
		_, err = s.List(ctx, "key_a")
		refused("List", err)
		refused("SetProgress", s.SetProgress(ctx, a.ID, "evt_0", webhooks.Progress{After: "evt_1"}))
		refused("Disable", s.Disable(ctx, a.ID, "evt_0", "timeout", a.CreatedAt))
		_, err = s.Enable(ctx, a.ID, "evt_0")
		refused("Enable", err)
		refused("Create", s.Create(ctx, webhookstest.Endpoint("key_a", 3)))
		if got := f.raw.HGet(ctx, s.hash, a.ID).Val(); got != forged {
			t.Errorf("%s: the value was written over: %q", name, got)
		}
	}
	if err := s.Delete(ctx, a.ID); err != nil {
		t.Fatalf("deleting the forged endpoint: %v", err)
	}
	if eps, err := s.Endpoints(ctx); err != nil || len(eps) != 1 || eps[0].ID != b.ID {
		t.Fatalf("after the delete: %+v, %v", eps, err)
	}
	if _, err := New(Config{Client: f.client(t), Brand: brand}); err == nil {
		t.Error("a store without the fleet's secret was made")
	}
}

func cut(v string) (mac, body string, ok bool) {
	if len(v) < macLen {
		return "", "", false
	}
	return v[:macLen], v[macLen:], true
}

// testSecretSealed: an endpoint's secret is not in Redis as such, and a
// sealed secret moved to another endpoint, in a value signed rightly,
// does not open (ErrForged).
func testSecretSealed(t *testing.T, f form) {
	ctx := context.Background()
	s := f.store(t, f.brand(), secret)
	a, b := webhookstest.Endpoint("key_a", 1), webhookstest.Endpoint("key_a", 2)
	b.Secret = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	for _, ep := range []webhooks.Endpoint{a, b} {
		if err := s.Create(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	va := f.raw.HGet(ctx, s.hash, a.ID).Val()
	if strings.Contains(va, strings.TrimPrefix(a.Secret, "whsec_")) {
		t.Fatalf("the secret is stored as such: %s", va)
	}
	if got, err := s.Endpoint(ctx, a.ID); err != nil || got.Secret != a.Secret {
		t.Fatalf("the secret read back: %q, %v", got.Secret, err)
	}
	var ra, rb record
	_, ba, _ := cut(va)
	_, bb, _ := cut(f.raw.HGet(ctx, s.hash, b.ID).Val())
	if json.Unmarshal([]byte(ba), &ra) != nil || json.Unmarshal([]byte(bb), &rb) != nil {
		t.Fatal("values do not decode")
	}
	ra.Secret = rb.Secret
	body, _ := json.Marshal(ra)
	if err := f.raw.HSet(ctx, s.hash, a.ID, s.mac(a.ID, body)+string(body)).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Endpoint(ctx, a.ID); !errors.Is(err, ErrForged) {
		t.Fatalf("another endpoint's sealed secret: %v, want ErrForged", err)
	}
}

package cache_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream/pms"

	"github.com/google/uuid"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// stack is the real chain over loopback: pmsim, the PMS client (retries,
// breaker), Direct, and the Cache.
type stack struct {
	sim    *pmsim.Sim
	client *pms.Client
	cache  *cache.Cache
}

func newStack(t *testing.T, cfg cache.Config) *stack {
	t.Helper()
	sim := pmsim.New(pmsim.Config{Seed: 7, Brands: 1, HotelsPerBrand: 40})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	if cfg.Now == nil {
		t.Fatal("newStack: the cache's Now is the stack's clock; give one")
	}
	client, err := pms.NewClient(pms.ClientConfig{
		BaseURL: srv.URL,
		// The cache's day, moving on from it: the breaker and the retries
		// run as on the wall clock whatever the test does to the cache's.
		Now: testkit.From(cfg.Now()),
		// Deadlines far beyond any answer of the simulator: these tests are
		// about loads, coalescing and stale serving, never about a
		// deadline, and must not fail on a machine too busy to answer a
		// 200 ms page within a second.
		CallTimeout:    30 * time.Second,
		AttemptTimeout: 15 * time.Second,
		Retry:          pms.RetryConfig{WaitMin: time.Millisecond, WaitMax: 5 * time.Millisecond},
		// Opens after 3 failed calls and stays open for the whole test.
		Breaker: pms.BreakerConfig{ConsecutiveFailures: 3, OpenTimeout: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.CloseIdleConnections)
	cfg.Key = "aurora/live"
	c := cache.New(pms.NewDirect(client, pms.DirectOptions{Brand: "aurora", Now: cfg.Now}), cfg)
	t.Cleanup(c.Close)
	return &stack{sim: sim, client: client, cache: c}
}

func TestIntegrationStaleOnBadGateway(t *testing.T) {
	// An injected clock: the outage below lasts five minutes of it.
	clk := testkit.NewClockAt(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	start := clk.Now()
	st := newStack(t, cache.Config{TTL: cache.DefaultTTL, RefreshAhead: 1, Now: clk.Now})
	ctx := context.Background()
	snap, err := st.cache.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := snap.Active[0].ID
	if _, err := st.cache.Property(ctx, id); err != nil {
		t.Fatal(err)
	}
	st.sim.SetFaults(pmsim.Faults{ErrorStatus: http.StatusInternalServerError})
	clk.Set(start.Add(time.Minute))
	before := st.sim.Requests()
	it, err := st.cache.Property(ctx, id)
	if err != nil || !bytes.Equal(it.JSON, snap.Active[0].JSON) {
		t.Fatalf("%v; want the stale property", err)
	}
	// The held snapshot answered at once; its refresh walk failed in the
	// background: one page, two retries.
	testkit.Eventually(t, "the refresh walk's three attempts", func() bool { return st.sim.Requests()-before >= 3 })
	if _, err := st.cache.Property(ctx, id); err != nil {
		t.Fatalf("%v; want the stale property", err)
	}
	if n := st.sim.Requests() - before; n != 3 {
		t.Fatalf("PMS attempts %d, want 3 (one page, two retries; then the refresh backs off)", n)
	}
	clk.Set(start.Add(cache.DefaultStale))
	if _, err := st.cache.Property(ctx, id); upstream.KindOf(err) != upstream.BadGateway {
		t.Fatalf("past Stale: %v; want BAD_GATEWAY", err)
	}
}

// 100 concurrent cold requests for the list make one PMS load over
// loopback, and the leader cancelling does not fail the others (docs/resilience.md). The simulator's latency keeps the load in flight.
func TestIntegrationHerdAndCancelledLeader(t *testing.T) {
	st := newStack(t, cache.Config{TTL: time.Minute, Now: testkit.From(testkit.Epoch)})
	st.sim.SetFaults(pmsim.Faults{Latency: 200 * time.Millisecond})

	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderErr := make(chan error, 1)
	go func() { _, err := st.cache.Snapshot(leaderCtx); leaderErr <- err }()
	testkit.Eventually(t, "the leader's load reached the PMS", func() bool { return st.sim.ListRequests() > 0 })

	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Go(func() {
			s, err := st.cache.Snapshot(context.Background())
			if err == nil && s.Len() == 0 {
				err = errors.New("empty snapshot")
			}
			errs <- err
		})
	}
	cancelLeader()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v, want context.Canceled", err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("follower: %v", err)
		}
	}
	if n := st.sim.ListRequests(); n != 1 {
		t.Fatalf("PMS list requests %d, want 1", n)
	}
}

// Random unknown ids do not grow the cache over the real chain either: with
// a fresh list they never reach the PMS; without one, each is a PMS 404
// that is not stored (docs/resilience.md).
func TestIntegrationUnknownIDs(t *testing.T) {
	st := newStack(t, cache.Config{TTL: time.Minute, Now: testkit.From(testkit.Epoch)})
	ctx := context.Background()
	for range 500 { // cold: one snapshot load, then the snapshot answers
		if _, err := st.cache.Property(ctx, uuid.NewString()); upstream.KindOf(err) != upstream.NotFound {
			t.Fatalf("cold: %v, want PROPERTY_NOT_FOUND", err)
		}
	}
	if st.sim.GetRequests() != 0 || st.sim.ListRequests() != 1 {
		t.Fatalf("cold: PMS gets %d, lists %d; want 0 and 1 (one snapshot answers)", st.sim.GetRequests(), st.sim.ListRequests())
	}

	if _, err := st.cache.Snapshot(ctx); err != nil {
		t.Fatal(err)
	}
	before, gets := st.cache.Len(), st.sim.GetRequests()
	for range 10_000 {
		if _, err := st.cache.Property(ctx, uuid.NewString()); upstream.KindOf(err) != upstream.NotFound {
			t.Fatalf("warm: %v, want PROPERTY_NOT_FOUND", err)
		}
	}
	if st.cache.Len() != before || st.sim.GetRequests() != gets {
		t.Fatalf("warm: Len %d -> %d, PMS gets %d; want unchanged, none", before, st.cache.Len(), st.sim.GetRequests()-gets)
	}
}

package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// docs/contract.md section 17 (a cold fleet walks once):
// three instances started together on one real Redis, each wired as run
// wires it (the production Redis client and guard, the fleet loader, the
// cache), are hit at once by 64 gets each: the PMS is walked exactly once
// between them, and every get answers the whole catalog. Run it with
// -count=50 beside CPU hogs: the walk must stay single by construction,
// not by timing.
func TestColdFleetWalksOnce(t *testing.T) {
	const instances, gets = 3, 64
	const stagger = 8 * time.Millisecond // a few walks of the simulator
	srv := redistest.Start(t)
	pms := newWalkCountingPMS(t)
	ctx := context.Background()
	tel := quietTelemetry(t)
	logs := &testkit.LogBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := settings{Brand: "aurora", PMSToken: "pms-secret-token", PMSTimeout: 9 * time.Second,
		PMSAttempt: 3 * time.Second, CacheTTL: 30 * time.Second, CacheStale: 5 * time.Minute}
	cats := make([]upstream.Catalog, instances)
	for i := range cats {
		// The production guard, as joinFleet.
		cats[i] = fleetCatalog(t, cfg, pms.srv.URL, redisconn.Config{URL: srv.URL(), Log: log}, log, tel)
	}

	start := make(chan struct{})
	var wg sync.WaitGroup
	sizes := make([][]int, instances)
	errs := make(chan error, instances*gets)
	for i, cat := range cats {
		sizes[i] = make([]int, gets)
		// The instances are hit a little apart, as clients reach three
		// processes: any interleaving of their Redis calls must give one walk.
		offset := time.Duration(rand.Int64N(int64(stagger)))
		for j := range gets {
			wg.Go(func() {
				<-start
				time.Sleep(offset) // the scenario: clients reaching the instances apart, not a wait for an event
				s, err := cat.Snapshot(ctx)
				if err != nil {
					errs <- err
					return
				}
				sizes[i][j] = s.Len()
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("get: %v", err)
	}
	if n := pms.walks.Load(); n != 1 {
		t.Errorf("the cold fleet walked the PMS %d times, want 1; log:\n%s", n, logs.String())
	}
	want := sizes[0][0]
	for i := range sizes {
		for j, n := range sizes[i] {
			if n != want || n == 0 {
				t.Fatalf("instance %d get %d: %d properties, want %d (not 0)", i, j, n, want)
			}
		}
	}
}

// docs/contract.md section 17: an edge that gets no request at all still shows, at
// /fleet on its admin listener, that Redis is unavailable within 5 s of
// Redis refusing writes (min-replicas-to-write with no replica:
// NOREPLICAS), and shared again within 5 s of Redis accepting them.
func TestIdleFleetShowsRedisRefusingWrites(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	pms, _ := slowPMS(t, 0)
	keysFile, _ := keystest.Live(t, "aurora")
	s := start(t, map[string]string{
		"EDGE_ADDR": "127.0.0.1:0", "EDGE_ADMIN_ADDR": "127.0.0.1:0", "EDGE_BRAND": "aurora",
		"EDGE_KEYS_FILE": keysFile, "PMS_BASE_URL": pms.URL, "PMS_TOKEN": "pms-secret-token", "EDGE_DOCS_URL": testDocsURL,
		"EDGE_REDIS_URL": srv.URL(), "EDGE_FLEET_SECRET": testFleetSecret,
	})
	admin := waitAdmin(t, s.stderr)
	shared := func() bool {
		res, err := http.Get(admin + "/fleet")
		if err != nil {
			t.Fatalf("GET /fleet: %v", err)
		}
		defer res.Body.Close()
		var st struct {
			Redis  string `json:"redis"`
			Shared bool   `json:"shared"`
		}
		if err := json.NewDecoder(res.Body).Decode(&st); err != nil || st.Redis != "on" {
			t.Fatalf("/fleet: %+v, %v", st, err)
		}
		return st.Shared
	}
	// within waits (bounded by testkit.EventuallyTimeout) until /fleet
	// says want, then holds the claim, 5 s, to the edge's own log: its
	// line msg, written as the state flips, within 5 s of since. The
	// test's polling, slowed by a loaded machine, is not the edge's.
	within := func(want bool, what, msg string, since time.Time) {
		t.Helper()
		testkit.Eventually(t, what+": /fleet says shared:"+strconv.FormatBool(want), func() bool { return shared() == want })
		if msg == "" {
			return
		}
		var line string
		for l := range strings.SplitSeq(s.stderr.String(), "\n") {
			if strings.Contains(l, `"msg":"`+msg) && !logTime(t, l).Before(since) {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("%s: /fleet flipped with no %q line after %v:\n%s", what, msg, since, s.stderr.String())
		}
		if took := logTime(t, line).Sub(since); took > 5*time.Second {
			t.Errorf("%s: the edge logged %q %v after the change; want within 5 s", what, msg, took)
		}
	}
	within(true, "at start", "", time.Time{})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	refusing := time.Now()
	if err := rdb.ConfigSet(t.Context(), "min-replicas-to-write", "1").Err(); err != nil {
		t.Fatal(err)
	}
	within(false, "Redis refusing writes, no request", "redis refuses writes", refusing)
	accepting := time.Now()
	if err := rdb.ConfigSet(t.Context(), "min-replicas-to-write", "0").Err(); err != nil {
		t.Fatal(err)
	}
	within(true, "Redis accepting writes again, no request", "redis accepts writes again", accepting)
}

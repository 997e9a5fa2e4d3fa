package main

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/redisconn"
	"github.com/partner-edge/partner-edge/upstream/redisconn/redistest"
)

// The catalogs of two instances on one Redis: the first walks the PMS, the
// second takes its publication (same data, no walk). With Redis down a
// third walks the PMS itself and answers all the same.
func TestCatalogsShareLoadsThroughRedis(t *testing.T) {
	srv := redistest.Start(t)
	pms := newWalkCountingPMS(t)
	ctx := context.Background()
	tel := quietTelemetry(t)
	log := slog.New(slog.DiscardHandler)
	cfg := settings{Brand: "aurora", PMSToken: "pms-secret-token", PMSTimeout: 5 * time.Second,
		PMSAttempt: 2 * time.Second, CacheTTL: time.Minute, CacheStale: time.Minute}
	catalog := func() upstream.Catalog {
		// A generous call deadline: this test is about sharing, and on a
		// busy machine (-race, the whole suite) a publication can take
		// longer than the production 100 ms; Redis down still fails at once
		// (connection refused).
		return fleetCatalog(t, cfg, pms.srv.URL, redisconn.Config{URL: srv.URL(), Guard: redisconn.GuardConfig{CallTimeout: 10 * time.Second}}, log, tel)
	}
	first, err := catalog().Snapshot(ctx)
	if err != nil || pms.walks.Load() != 1 || first.Len() == 0 {
		t.Fatalf("first instance: %v, walks %d", err, pms.walks.Load())
	}
	second, err := catalog().Snapshot(ctx)
	if err != nil || pms.walks.Load() != 1 {
		t.Fatalf("second instance: %v, walks %d; want the publication, no walk", err, pms.walks.Load())
	}
	if second.Len() != first.Len() || !bytes.Equal(second.ActiveJSON(0, 1000), first.ActiveJSON(0, 1000)) {
		t.Fatalf("the shared snapshot differs from the walked one")
	}
	srv.Stop()
	third, err := catalog().Snapshot(ctx)
	if err != nil || pms.walks.Load() != 2 || third.Len() != first.Len() {
		t.Fatalf("Redis down: %v, walks %d; want a local walk", err, pms.walks.Load())
	}
}

// fleetCatalog is the live catalog of one instance wired as run wires it
// with Redis: a fleet client of fc, the fleet loader, the cache; all closed
// when t ends.
func fleetCatalog(t *testing.T, cfg settings, pmsURL string, fc redisconn.Config, log *slog.Logger, tel *observability.Telemetry) upstream.Catalog {
	t.Helper()
	c, err := redisconn.New(fc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	cat, err := newCatalog(cfg, pmsURL, keys.ModeLive, "test", log, tel, newMember(cfg.Brand, c, []byte(testFleetSecret), log), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cat.Close)
	return cat
}

// quietTelemetry is the telemetry of an in-process edge part in these
// tests: the SDK's defaults with no OTEL_* variable read (no exporter),
// shut down when tb ends.
func quietTelemetry(tb testing.TB) *observability.Telemetry {
	tb.Helper()
	tel, err := observability.New(context.Background(), observability.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	return tel
}

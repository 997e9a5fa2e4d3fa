package cache_test

import (
	"context"
	"strings"
	"testing"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/cache"
)

// The cache's instruments keep the names and labels the SRE rules and
// dashboards use: every outcome of both PMSs exposed from the start, an
// unknown outcome adds no series, panics counted per PMS.
func TestCacheMetricsExposed(t *testing.T) {
	tel, err := observability.New(context.Background(), observability.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	ctx := context.Background()
	live, err := cache.NewMetrics(tel.Meter(), "live")
	if err != nil {
		t.Fatal(err)
	}
	sandbox, err := cache.NewMetrics(tel.Meter(), "sandbox")
	if err != nil {
		t.Fatal(err)
	}
	live.Lookup(ctx, cache.OutcomeMiss)
	live.Lookup(ctx, cache.OutcomeStale)
	live.Lookup(ctx, cache.OutcomeStale)
	live.Lookup(ctx, "bogus")
	live.Lookup(ctx, cache.OutcomeRefresh) // not a lookup outcome: ignored
	sandbox.Lookup(ctx, cache.OutcomeHit)
	sandbox.Lookup(ctx, cache.OutcomeCoalesced)
	live.LoadPanic(ctx)

	fams := testkit.Scrape(t, tel.MetricsHandler())
	value := func(name string, labels ...string) float64 {
		t.Helper()
		want := strings.Join(labels, ",")
	next:
		for _, m := range fams[name].GetMetric() {
			var got []string
			for _, l := range m.GetLabel() {
				if l.GetName() == "pms" || l.GetName() == "outcome" {
					got = append(got, l.GetName()+"="+l.GetValue())
				}
			}
			if strings.Join(got, ",") != want {
				continue next
			}
			return m.GetCounter().GetValue()
		}
		t.Fatalf("%s{%s}: no such series", name, want)
		return 0
	}
	for _, c := range []struct {
		pms, outcome string
		want         float64
	}{{"live", "miss", 1}, {"live", "stale", 2}, {"live", "hit", 0}, {"live", "coalesced", 0},
		{"sandbox", "hit", 1}, {"sandbox", "coalesced", 1}, {"sandbox", "miss", 0}, {"sandbox", "stale", 0}} {
		if got := value("partner_edge_cache_lookups_total", "outcome="+c.outcome, "pms="+c.pms); got != c.want {
			t.Errorf("cache %s %s = %v, want %v", c.pms, c.outcome, got, c.want)
		}
	}
	if got := len(fams["partner_edge_cache_lookups_total"].GetMetric()); got != 2*len(cache.LookupOutcomes) {
		t.Errorf("cache series = %d, want %d (a bogus outcome must not add one)", got, 2*len(cache.LookupOutcomes))
	}
	for pms, want := range map[string]float64{"live": 1, "sandbox": 0} {
		if got := value("partner_edge_cache_load_panics_total", "pms="+pms); got != want {
			t.Errorf("load panics %s = %v, want %v", pms, got, want)
		}
	}
}

// BenchmarkLookupMetrics is the metric cost of one cache hit.
func BenchmarkLookupMetrics(b *testing.B) {
	tel, err := observability.New(context.Background(), observability.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	live, err := cache.NewMetrics(tel.Meter(), "live")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			live.Lookup(ctx, cache.OutcomeHit)
		}
	})
}

package cache_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
)

// docs/contract.md section 24, "Walk metrics mean one thing": a fleet
// member's load that waited 10 s for another's lease and then walked for
// 3 s reports a walk of 3 s and, apart, a lease wait of 10 s (metrics
// and its log line); a member that took another's publication reports
// the wait and the age of the snapshot it serves, and no walk.
func TestWalkDurationLeavesOutTheLeaseWait(t *testing.T) {
	tel, err := observability.New(context.Background(), observability.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	m, err := cache.NewMetrics(tel.Meter(), "live")
	if err != nil {
		t.Fatal(err)
	}
	clock := testkit.NewClock()
	log, logs := testkit.NewLogger()
	var took, waited time.Duration
	var pages int
	var walkedAt time.Time
	c := cache.New(nil, cache.Config{TTL: time.Minute, Now: clock.Now, Metrics: m, Logger: log,
		Load: func(ctx context.Context) (*upstream.Snapshot, error) {
			st := upstream.WalkStatsFrom(ctx)
			clock.Advance(took + waited)
			st.SetLeaseWait(waited)
			if pages > 0 {
				st.SetWalkTime(took)
				st.Page(pages)
			}
			return upstream.NewSnapshot(nil, walkedAt), nil
		}})
	defer c.Close()
	gauge := func(name string, labels string) float64 {
		t.Helper()
		for _, s := range testkit.Scrape(t, tel.MetricsHandler())[name].GetMetric() {
			var got []string
			for _, l := range s.GetLabel() {
				if l.GetName() == "pms" || l.GetName() == "outcome" {
					got = append(got, l.GetName()+"="+l.GetValue())
				}
			}
			if strings.Join(got, ",") == labels {
				return s.GetGauge().GetValue()
			}
		}
		t.Fatalf("no %s{%s}", name, labels)
		return 0
	}

	took, waited, pages, walkedAt = 3*time.Second, 10*time.Second, 2, clock.Now()
	if _, err := c.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := gauge("partner_edge_pms_walk_duration_seconds", "outcome=ok,pms=live"); d != 3 {
		t.Errorf("walk duration %v s; want the PMS walk alone, 3 s", d)
	}
	if w := gauge("partner_edge_pms_walk_lease_wait_seconds", "pms=live"); w != 10 {
		t.Errorf("lease wait %v s; want 10 s", w)
	}
	if !strings.Contains(logs.String(), "duration=3s") || !strings.Contains(logs.String(), "lease_wait=10s") {
		t.Errorf("the walk's line does not tell the walk and the wait apart:\n%s", logs)
	}

	clock.Advance(2 * time.Minute)                                                       // past TTL: the next load takes a publication
	took, waited, pages, walkedAt = 0, 2*time.Second, 0, clock.Now().Add(-5*time.Second) // on the cache's clock
	if _, err := c.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := gauge("partner_edge_pms_walk_duration_seconds", "outcome=ok,pms=live"); d != 3 {
		t.Errorf("walk duration %v s after taking a publication; want the last walk's, 3 s", d)
	}
	if w := gauge("partner_edge_pms_walk_lease_wait_seconds", "pms=live"); w != 2 {
		t.Errorf("lease wait %v s; want 2 s", w)
	}
	if age := gauge("partner_edge_pms_walk_age_seconds", "pms=live"); age < 5 || age > 60 {
		t.Errorf("walk age %v s; want the publication's, about 5 s", age)
	}
}

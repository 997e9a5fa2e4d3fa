package events

import (
	"context"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
)

// The feed's instruments under the names docs/observability.md gives:
// events published by type, the feed's length and the oldest event's age,
// per PMS.
func TestFeedMetrics(t *testing.T) {
	tel, err := observability.New(context.Background(), observability.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tel.Shutdown(context.Background()) })
	c := &clock{t0}
	live := newFeed(t, c, Config{Meter: tel.Meter()})
	test := newFeed(t, c, Config{Mode: "test", Meter: tel.Meter()})
	b := prop(2, "B", "active")
	load := live.Watch(walks(snap(t0, prop(1, "A", "active"), b), snap(t0.Add(time.Minute), prop(1, "A1", "active"), prop(3, "C", "active"))))
	_, _ = load(context.Background())
	_, _ = load(context.Background())
	_, _ = test.Watch(walks(snap(t0, b)))(context.Background())
	c.now = t0.Add(3 * time.Minute)

	fams := testkit.Scrape(t, tel.MetricsHandler())
	if m := testkit.Series(t, fams, "partner_edge_events_size_bytes", map[string]string{"pms": "live"}); m.GetGauge().GetValue() != float64(live.log.held()) || live.log.held() <= 0 {
		t.Errorf("partner_edge_events_size_bytes{pms=live} = %v; want the %d bytes the feed counts", m.GetGauge().GetValue(), live.log.held())
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"partner_edge_events_published_total", map[string]string{"pms": "live", "type": "property.updated"}, 1},
		{"partner_edge_events_published_total", map[string]string{"pms": "live", "type": "property.created"}, 1},
		{"partner_edge_events_published_total", map[string]string{"pms": "live", "type": "property.removed"}, 1},
		{"partner_edge_events_published_total", map[string]string{"pms": "test", "type": "property.created"}, 0},
		{"partner_edge_events_length", map[string]string{"pms": "live"}, 3},
		{"partner_edge_events_length", map[string]string{"pms": "test"}, 0},
		{"partner_edge_events_age_seconds", map[string]string{"pms": "live"}, 120},
		{"partner_edge_events_age_seconds", map[string]string{"pms": "test"}, 0},
		{"partner_edge_events_size_bytes", map[string]string{"pms": "test"}, 0},
	} {
		m := testkit.Series(t, fams, tc.name, tc.labels)
		got := m.GetCounter().GetValue() + m.GetGauge().GetValue()
		if got != tc.want {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}

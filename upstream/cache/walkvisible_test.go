package cache_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream/pms"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"
	"github.com/partner-edge/partner-edge/upstream/cache"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// TestWalksAreVisible (docs/contract.md section 24): a walk of 2,000
// hotels in pages of 100, one in eight unmappable, logs one INFO line with
// its pages, records, rejected records and duration; the metrics count
// the walk and its pages and give its duration and age; its span carries
// at most RejectionEventsPerWalk mapping.rejected events and a count per
// reason for all of them, so the SDK drops none (and never logs its
// "limit reached" warning, which it prints for a span that drops events).
func TestWalksAreVisible(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	tel, err := observability.New(context.Background(), observability.Config{SpanExporter: exp, MetricReader: reader,
		Getenv: func(string) string { return "" }, TailSampling: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(context.Background())
	sim := pmsim.New(pmsim.Config{Seed: 7, Brands: 1, HotelsPerBrand: 2000, PageSize: 100})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	var logs bytes.Buffer
	now := testkit.From(testkit.Epoch) // the client, its walks and the cache share one clock
	c, err := cache.NewPMS(cache.PMSConfig{Mode: "live",
		Client: pms.ClientConfig{BaseURL: srv.URL, AttemptTimeout: 5 * time.Second, Now: now},
		Direct: pms.DirectOptions{Brand: "aurora", Now: now},
		Cache:  cache.Config{TTL: time.Hour, Key: "aurora/live", Now: now}, Telemetry: tel,
		Log: observability.NewLogger(&logs, "json", slog.LevelInfo)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	snap, err := c.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	var walk *tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == cache.SpanWalk {
			walk = &s
		}
	}
	if walk == nil {
		t.Fatal("no walk span")
	}
	attrs := map[string]int64{}
	for _, kv := range walk.Attributes {
		attrs[string(kv.Key)] = kv.Value.AsInt64()
	}
	rejected := attrs[string(upstream.AttrWalkRejected)]
	var byReason int64
	for k, n := range attrs {
		if strings.HasPrefix(k, upstream.AttrRejectedByPrefix) {
			byReason += n
		}
	}
	var events int64
	for _, e := range walk.Events {
		if e.Name == upstream.EventMappingRejected {
			events++
		}
	}
	if want := int64(2000 - snap.Len()); rejected != want || byReason != want {
		t.Errorf("walk span: %d rejected, %d by reason; want the %d records left out", rejected, byReason, want)
	}
	if events != upstream.RejectionEventsPerWalk || walk.DroppedEvents != 0 ||
		attrs[string(upstream.AttrRejectedEventsDropped)] != rejected-events {
		t.Errorf("walk span: %d rejection events, %d dropped by the SDK, %d summarised only; want %d, 0 and the rest",
			events, walk.DroppedEvents, attrs[string(upstream.AttrRejectedEventsDropped)], upstream.RejectionEventsPerWalk)
	}
	if attrs[string(upstream.AttrPages)] != 20 || attrs[string(upstream.AttrRecords)] != 2000 {
		t.Errorf("walk span: pages %d, records %d; want 20 and 2000", attrs[string(upstream.AttrPages)], attrs[string(upstream.AttrRecords)])
	}

	var told int
	for l := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil || m["msg"] != "pms walk finished" {
			continue
		}
		told++
		if m["level"] != "INFO" || m["pages"] != 20.0 || m["records"] != 2000.0 || m["rejected"] != float64(rejected) ||
			m["kind"] != cache.WalkFirstLoad || m["duration"] == nil {
			t.Errorf("walk line %s: want INFO, first_load, 20 pages, 2000 records, %d rejected and the duration", l, rejected)
		}
	}
	if told != 1 {
		t.Errorf("%d walk lines, want 1:\n%s", told, logs.String())
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if o, _ := p.Attributes.Value("outcome"); o.AsString() != "failed" {
						got[m.Name] += float64(p.Value)
					}
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					got[m.Name] = p.Value
				}
			}
		}
	}
	if got["partner_edge.pms.walks"] != 1 || got["partner_edge.pms.walk.pages"] != 20 {
		t.Errorf("walks %v, pages %v; want 1 and 20", got["partner_edge.pms.walks"], got["partner_edge.pms.walk.pages"])
	}
	if d, ok := got["partner_edge.pms.walk.duration"]; !ok || d <= 0 {
		t.Errorf("walk duration %v (%v); want the walk's", d, ok)
	}
	if a, ok := got["partner_edge.pms.walk.age"]; !ok || a < 0 || a > 60 {
		t.Errorf("walk age %v (%v); want the seconds since the walk ended", a, ok)
	}
}

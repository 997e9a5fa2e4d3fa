package pms

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// BenchmarkGetHotelIdleGuard puts the idle guard (idleguard.go) beside
// net/http's Transport without it on the row it costs: a PMS get over a
// reused http connection, the miss with EDGE_CACHE_TTL=0.
func BenchmarkGetHotelIdleGuard(b *testing.B) {
	sim := pmsim.New(pmsim.Config{Brands: 1, Seed: 3})
	srv := httptest.NewServer(sim)
	b.Cleanup(srv.Close)
	var rec struct {
		ID string `json:"hotel_id"`
	}
	if err := json.Unmarshal(sim.Records("aurora")[0], &rec); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name      string
		transport func() *ClientConfig
	}{
		{"guarded", func() *ClientConfig { return &ClientConfig{BaseURL: srv.URL, Now: testkit.From(testkit.Epoch)} }},
		{"net-http-alone", func() *ClientConfig {
			return &ClientConfig{BaseURL: srv.URL, Transport: NewTransport(), Now: testkit.From(testkit.Epoch)}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := NewClient(*bc.transport())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(c.CloseIdleConnections)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.GetHotel(ctx, "aurora", rec.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package upstream

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// A walk over the simulator decodes its pages with pageDecoder and hands
// over every record: BenchmarkWalkHotels times the walk of a large brand
// (the cold start's main cost), pages and records counted.
func BenchmarkWalkHotels(b *testing.B) {
	const n = 20_000
	srv := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 1, Brands: 1, HotelsPerBrand: n}))
	b.Cleanup(srv.Close)
	c, err := NewClient(ClientConfig{BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.CloseIdleConnections)
	b.ReportAllocs()
	for b.Loop() {
		got := 0
		if err := c.WalkHotels(context.Background(), "aurora", func([]byte) error { got++; return nil }); err != nil {
			b.Fatal(err)
		}
		if got != n {
			b.Fatalf("%d records, want %d", got, n)
		}
	}
}

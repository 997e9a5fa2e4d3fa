package pmsim

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// benchHotels is the brand size of the churn benchmarks: a large brand.
const benchHotels = 50_000

// BenchmarkChurnStep measures one churn step (Sim.Churn) in a brand of
// 50,000 hotels. Its cost should follow the records a step changes, not
// the brand's size.
func BenchmarkChurnStep(b *testing.B) {
	s := New(Config{Seed: 1, Brands: 1, HotelsPerBrand: benchHotels})
	b.ReportAllocs()
	for b.Loop() {
		s.Churn()
	}
}

// BenchmarkPageWhileChurning measures a list page of 100 hotels, served
// through ServeHTTP, while another goroutine churns the same brand of
// 50,000 hotels step after step: a page read must not wait behind a step.
func BenchmarkPageWhileChurning(b *testing.B) {
	s := New(Config{Seed: 1, Brands: 1, HotelsPerBrand: benchHotels})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				s.Churn()
			}
		}
	}()
	req := httptest.NewRequest(http.MethodGet, "/internal/v2/brands/aurora/hotels?limit=100", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
}

// BenchmarkPageIdle is BenchmarkPageWhileChurning's page with no churn:
// what a page costs on its own.
func BenchmarkPageIdle(b *testing.B) {
	s := New(Config{Seed: 1, Brands: 1, HotelsPerBrand: benchHotels})
	benchPages(b, s)
}

// BenchmarkChurnStepOf50 is a step of 50 changes (every kind, in turn) in
// a brand of 50,000 hotels.
func BenchmarkChurnStepOf50(b *testing.B) {
	s := New(Config{Seed: 1, Brands: 1, HotelsPerBrand: benchHotels, ChurnChanges: 50})
	b.ReportAllocs()
	for b.Loop() {
		s.Churn()
	}
}

// BenchmarkPageAt500ChangesPerSecond is a page of a brand of 50,000 hotels
// churned at 500 changes a second (50 every 100 ms), the steps made by the
// page requests themselves as cmd/pmsim makes them.
func BenchmarkPageAt500ChangesPerSecond(b *testing.B) {
	s := New(Config{Seed: 1, Brands: 1, HotelsPerBrand: benchHotels, Churn: 100 * time.Millisecond, ChurnChanges: 50})
	benchPages(b, s)
	b.ReportMetric(float64(s.Stats().Churn.Changes)/b.Elapsed().Seconds(), "changes/s")
}

func benchPages(b *testing.B, s *Sim) {
	req := httptest.NewRequest(http.MethodGet, "/internal/v2/brands/aurora/hotels?limit=100", nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

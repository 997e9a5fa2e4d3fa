package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/edge"
	"github.com/partner-edge/partner-edge/edge/keys"
	"github.com/partner-edge/partner-edge/edge/keys/keystest"
	"github.com/partner-edge/partner-edge/observability"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
	"github.com/partner-edge/partner-edge/upstream/shadow"
)

// What a shadow candidate costs a partner (docs/contract.md section 14): the
// edge answering lists and gets while its cache reloads the live PMS every
// 20 ms (TTL 20 ms, so refresh-ahead walks constantly and each walk hands
// its snapshot to the shadow), with no candidate, a candidate that hangs
// until its deadline, and one that fails every call.
//
//	go test -run '^$' -bench ShadowPartnerLatency -benchtime 3s -count 3 ./cmd/edge/
//
// Reported per request: ns/op, p50-ns and p99-ns (serial requests, so one
// request's latency), and candidate-walks (walks started during the run:
// the shadow was really busy).
func BenchmarkShadowPartnerLatency(b *testing.B) {
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	fail := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusInternalServerError) })
	for _, tc := range []struct {
		name      string
		candidate http.Handler
	}{{"none", nil}, {"hanging", hang}, {"failing", fail}, {"changed", pmsim.New(pmsim.Config{Seed: 5, Drift: pmsim.Drift{Drop: 3}})},
		// docs/contract.md section 17: 112 MB of valid records, and endless 7.6 MB
		// pages, against the candidate's default bound of 64 MiB. The
		// page is made once: a real candidate makes its pages elsewhere,
		// not on the edge's cores.
		{"huge", repeatedPage(7_600_000, 15)}, {"endless", repeatedPage(7_600_000, -1)}} {
		b.Run(tc.name, func(b *testing.B) {
			h, reqs, sh := shadowBenchEdge(b, tc.candidate)
			lat := make([]time.Duration, 0, b.N)
			w := &discardWriter{h: http.Header{}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := reqs[i%len(reqs)]
				start := time.Now()
				serve(h, w, req)
				lat = append(lat, time.Since(start))
				if w.code != http.StatusOK {
					b.Fatalf("%s: %d", req.URL, w.code)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2]), "p50-ns")
			b.ReportMetric(float64(p99(lat)), "p99-ns")
			if sh != nil {
				walks := sh.Walks("live")
				b.ReportMetric(float64(walks), "candidate-walks")
			}
		})
	}
}

// shadowBenchEdge is the edge as run builds it over a simulator, with the
// shadow of candidate (nil: none) running, and requests for a list and
// every property.
func shadowBenchEdge(b *testing.B, candidate http.Handler) (http.Handler, []*http.Request, *shadow.Shadow) {
	b.Helper()
	pms := httptest.NewServer(pmsim.New(pmsim.Config{Seed: 5}))
	b.Cleanup(pms.Close)
	token, rec, err := keys.Mint(strings.NewReader(strings.Repeat("shadow", 100)), "aurora", keys.ModeLive, nil)
	if err != nil {
		b.Fatal(err)
	}
	store := keystest.Open(b, rec)
	ctx, cancel := context.WithCancel(context.Background())
	tel, err := observability.New(ctx, observability.Config{Getenv: func(string) string { return "" }})
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	// The default walk deadline: a candidate walk to its bound, paced,
	// takes about 2 s (shadow.DefaultReadBytesPerSecond).
	cfg := settings{Brand: "aurora", PMSTimeout: 5 * time.Second, PMSAttempt: 2 * time.Second,
		CacheTTL: 20 * time.Millisecond, CacheStale: time.Hour, CandidateMaxWalkBytes: 64 << 20}
	var sh *shadow.Shadow
	done := make(chan struct{})
	if candidate != nil {
		cand := httptest.NewServer(candidate)
		b.Cleanup(cand.Close)
		cfg.CandidateURL = cand.URL
		if sh, err = newShadow(cfg, "bench", log, tel); err != nil {
			b.Fatal(err)
		}
		go func() { defer close(done); sh.Run(ctx) }()
	} else {
		close(done)
	}
	cat, err := newCatalog(cfg, pms.URL, keys.ModeLive, "bench", log, tel, nil, sh, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cancel(); <-done; cat.Close(); _ = tel.Shutdown(context.Background()) })
	h := edge.NewServer(edge.Config{Brand: "aurora", Logger: log, AuthFailLimit: 20}, store, cat, nil)
	newReq := func(path string) *http.Request {
		req, _ := http.NewRequest("GET", "http://edge.test/v1/"+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("User-Agent", "bench/1.0")
		req.RemoteAddr = "192.0.2.10:40000"
		return req
	}
	snap, err := cat.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	reqs := []*http.Request{newReq("properties?perPage=10")}
	for _, it := range snap.Active {
		reqs = append(reqs, newReq("properties/"+it.ID))
	}
	return h, reqs, sh
}

// repeatedPage serves a list of pages (negative: endless) that are all one
// page of about size bytes of valid records, made once, with a cursor to
// the next.
func repeatedPage(size int64, pages int) http.Handler {
	rec := httptest.NewRecorder()
	generatedHandler(size, -1).ServeHTTP(rec, httptest.NewRequest("GET", "/internal/v2/brands/aurora/hotels", nil))
	body := rec.Body.Bytes()
	hotels := body[:bytes.LastIndex(body, []byte(`],"nextCursor"`))+1]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Query().Get("cursor"), "c"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(hotels)
		if pages >= 0 && n+1 >= pages {
			_, _ = io.WriteString(w, `,"nextCursor":null}`)
			return
		}
		_, _ = fmt.Fprintf(w, `,"nextCursor":"c%d"}`, n+1)
	})
}

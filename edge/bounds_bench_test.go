package edge_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkUnknownQuery64KB answers a 64 KB query of distinct unknown
// names: 400 with 20 entries, a few KB, in time linear in the query.
func BenchmarkUnknownQuery64KB(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	q, _ := unknownQuery(64 << 10)
	r := env.request("/v1/properties?"+q, env.liveToken)
	warm(b, env.handler, r, http.StatusBadRequest)
	serveLoop(b, env.handler, r, http.StatusBadRequest)
}

// BenchmarkHealthUnderHugeQueries sends, per iteration, 300 requests with a
// 64 KB query of unknown names at once over loopback, and meanwhile asks
// /v1/health every 10 ms. It reports the slowest and the median health
// answer (health-max-ms, health-p99-ms, health-p50-ms): acceptance 5 of
// issue 11 wants the slowest under 100 ms on the project's 2-core machine.
// The load generator shares the process (and GOMAXPROCS) with the edge,
// so the figure is pessimistic; compare runs on an otherwise idle machine.
//
//	go test -run '^$' -bench HealthUnderHugeQueries -benchtime 5x ./edge/
func BenchmarkHealthUnderHugeQueries(b *testing.B) {
	env := newBenchEnv(b, time.Hour, nil)
	srv := httptest.NewServer(env.handler)
	b.Cleanup(srv.Close)
	q, _ := unknownQuery(64 << 10)
	target := srv.URL + "/v1/properties?" + q
	tr := &http.Transport{MaxIdleConnsPerHost: 300}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	healthClient := &http.Client{Transport: &http.Transport{}}

	get := func(c *http.Client, url, token string) (int, int) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("User-Agent", benchUA)
		res, err := c.Do(req)
		if err != nil {
			b.Error(err)
			return 0, 0
		}
		n, _ := io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res.StatusCode, int(n)
	}

	var healthTimes []time.Duration
	maxBody := 0
	for b.Loop() {
		var wg sync.WaitGroup
		done := make(chan struct{})
		var mu sync.Mutex
		for range 300 {
			wg.Go(func() {
				status, n := get(client, target, env.liveToken)
				if status != http.StatusBadRequest {
					b.Errorf("status %d, want 400", status)
				}
				mu.Lock()
				maxBody = max(maxBody, n)
				mu.Unlock()
			})
		}
		healthDone := make(chan struct{})
		go func() {
			defer close(healthDone)
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				start := time.Now()
				if status, _ := get(healthClient, srv.URL+"/v1/health", ""); status != http.StatusOK {
					b.Errorf("health %d", status)
				}
				healthTimes = append(healthTimes, time.Since(start))
				select {
				case <-done:
					return
				case <-tick.C:
				}
			}
		}()
		wg.Wait()
		close(done)
		<-healthDone
	}
	slices.Sort(healthTimes)
	b.ReportMetric(float64(healthTimes[len(healthTimes)-1].Microseconds())/1000, "health-max-ms")
	b.ReportMetric(float64(healthTimes[len(healthTimes)*99/100].Microseconds())/1000, "health-p99-ms")
	b.ReportMetric(float64(healthTimes[len(healthTimes)/2].Microseconds())/1000, "health-p50-ms")
	b.ReportMetric(float64(maxBody), "max-body-bytes")
}

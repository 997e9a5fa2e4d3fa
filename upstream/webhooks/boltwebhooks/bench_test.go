package boltwebhooks_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
	"github.com/partner-edge/partner-edge/upstream/webhooks/boltwebhooks"
)

// BenchmarkDeliverAsDeployed is a single edge's delivery as deployed: the
// Deliverer, the store in EDGE_DATA_DIR (this package, each delivery's
// progress on disk), the client NewClient makes (its connection pool as
// shipped) and loopback HTTP to 100 endpoints of one receiver, as
// bench/run's edge+hooks has. Events come in waves, as walks add them:
// perWave events, a Wake, every endpoint delivers them, the next wave.
// b.N is deliveries; cpu-µs/delivery is the process's CPU (utime+stime,
// the receiver's included) over them, the figure bench/run's edge+hooks
// divides its requests' CPU by (docs/operations.md, "What deliveries cost").
func BenchmarkDeliverAsDeployed(b *testing.B) {
	for _, perWave := range []int{1, 4} {
		b.Run(fmt.Sprintf("events-per-wave=%d", perWave), func(b *testing.B) { benchDeliver(b, perWave) })
	}
}

func benchDeliver(b *testing.B, perWave int) {
	const endpoints = 100
	nWaves := max(b.N/(endpoints*perWave), 1)
	var got atomic.Int64
	var target atomic.Int64
	reached := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
		if got.Add(1) == target.Load() {
			reached <- struct{}{}
		}
	}))
	defer srv.Close()
	st, err := boltwebhooks.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range endpoints {
		err := st.Create(ctx, webhooks.Endpoint{ID: fmt.Sprintf("whe_%03d", i), KeyID: fmt.Sprintf("key_%d", i/10),
			URL: fmt.Sprintf("%s/hooks/%d", srv.URL, i), Secret: webhooks.NewSecret()})
		if err != nil {
			b.Fatal(err)
		}
	}
	allow, _ := webhooks.ParseAllow("127.0.0.0/8")
	s := &webhooks.HTTPSender{Client: webhooks.NewClient(webhooks.ClientConfig{Guard: webhooks.Guard{Allow: allow}}), AllowHTTP: true}
	defer s.Close()
	f := &waves{}
	d, err := webhooks.New(webhooks.Config{Store: st, Source: f, Sender: s, Poll: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	wave := func() {
		target.Add(endpoints * int64(perWave))
		f.add(perWave)
		d.Wake()
		<-reached
	}
	wave() // every endpoint's goroutine started, a connection made
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for range nWaves {
		wave()
	}
	cpu := cpuTime(b) - cpu0
	b.StopTimer()
	n := nWaves * endpoints * perWave
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/delivery")
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "deliveries/s")
	b.ReportMetric(0, "ns/op") // b.N is rounded to whole waves: the figures above are per delivery
	cancel()
	<-done
}

// cpuTime is this process's CPU so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waves is a Source of events added in waves, the same to every
// endpoint: "evt_000001", ...
type waves struct {
	mu  sync.Mutex
	evs []webhooks.Event
}

func (f *waves) add(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		id := fmt.Sprintf("evt_%06d", len(f.evs)+1)
		f.evs = append(f.evs, webhooks.Event{ID: id, OccurredAt: time.Now(),
			Body: []byte(`{"id":"` + id + `","type":"property.updated","data":{"id":"prop_1"}}`)})
	}
}

func (f *waves) Read(_ context.Context, _ *webhooks.Endpoint, after string, limit int) ([]webhooks.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := 0
	if after != "" {
		// ids grow with their place in the feed
		i, _ = slices.BinarySearchFunc(f.evs, after, func(e webhooks.Event, id string) int { return strings.Compare(e.ID, id) })
		i++
	}
	return slices.Clone(f.evs[min(i, len(f.evs)):min(len(f.evs), i+limit)]), nil
}

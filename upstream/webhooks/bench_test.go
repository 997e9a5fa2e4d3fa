package webhooks_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// BenchmarkDeliver100Endpoints: deliveries through the whole path (the
// Deliverer, signing, the guarded client, loopback HTTP) to 100 endpoints
// of one receiver, each endpoint getting b.N/100 events; reports
// deliveries a second (of the wall clock: divide by the cores used for a
// figure per core).
func BenchmarkDeliver100Endpoints(b *testing.B) {
	const endpoints = 100
	perEndpoint := max(b.N/endpoints, 1)
	want := int64(perEndpoint * endpoints)
	var got atomic.Int64
	all := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
		if got.Add(1) == want {
			close(all)
		}
	}))
	defer srv.Close()
	mem, f := &webhooks.Memory{}, &feed{}
	for i := range endpoints {
		err := mem.Create(context.Background(), webhooks.Endpoint{ID: fmt.Sprintf("whe_%03d", i), KeyID: fmt.Sprintf("key_%d", i/10),
			URL: fmt.Sprintf("%s/hooks/%d", srv.URL, i), Secret: webhooks.NewSecret()})
		if err != nil {
			b.Fatal(err)
		}
	}
	f.add(perEndpoint)
	allow, _ := webhooks.ParseAllow("127.0.0.0/8")
	client := webhooks.NewClient(webhooks.ClientConfig{Guard: webhooks.Guard{Allow: allow}})
	// The wall clock (Now nil), that of the feed's events and of a real
	// receiver's check of webhook-timestamp: nothing here is on a fixed day.
	s := &webhooks.HTTPSender{Client: client, AllowHTTP: true, Now: nil}
	d, err := webhooks.New(webhooks.Config{Store: mem, Source: f, Sender: s, Poll: time.Hour, Now: nil})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	b.ResetTimer()
	start := time.Now()
	go func() { done <- d.Run(ctx) }()
	<-all
	b.StopTimer()
	b.ReportMetric(float64(want)/time.Since(start).Seconds(), "deliveries/s")
	cancel()
	<-done
}

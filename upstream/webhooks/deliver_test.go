package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// feed is a Source over a list of events, ids evt_001, evt_002...; the
// events before floor were dropped; a key in paused receives nothing.
type feed struct {
	mu     sync.Mutex
	evs    []webhooks.Event
	floor  int
	paused map[string]bool
}

var _ webhooks.Source = (*feed)(nil)

// add appends n events that occurred now.
func (f *feed) add(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		id := fmt.Sprintf("evt_%03d", len(f.evs)+1)
		f.evs = append(f.evs, webhooks.Event{ID: id, OccurredAt: time.Now(), Body: []byte(`{"id":"` + id + `"}`)})
	}
}

func (f *feed) Read(_ context.Context, ep *webhooks.Endpoint, after string, limit int) ([]webhooks.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.paused[ep.KeyID] {
		return nil, webhooks.ErrPaused
	}
	i := 0
	if after != "" {
		i = slices.IndexFunc(f.evs, func(e webhooks.Event) bool { return e.ID == after }) + 1
		if i == 0 {
			return nil, errors.New("feed: not a position of this feed")
		}
	}
	if i < f.floor {
		return nil, webhooks.ErrExpired
	}
	return slices.Clone(f.evs[i:min(len(f.evs), i+limit)]), nil
}

// try is one attempt as the sender saw it.
type try struct {
	endpoint, event string
	attempt         int
	at              time.Time
}

// sender is a Sender answering with answer (which may take its time),
// keeping every attempt.
type sender struct {
	mu     sync.Mutex
	answer func(ep *webhooks.Endpoint, ev webhooks.Event) webhooks.Result
	tries  []try
}

var _ webhooks.Sender = (*sender)(nil)

func (s *sender) Send(_ context.Context, ep *webhooks.Endpoint, ev webhooks.Event, attempt int) webhooks.Result {
	s.mu.Lock()
	s.tries = append(s.tries, try{ep.ID, ev.ID, attempt, time.Now()})
	answer := s.answer
	s.mu.Unlock()
	return answer(ep, ev)
}

func (s *sender) setAnswer(f func(ep *webhooks.Endpoint, ev webhooks.Event) webhooks.Result) {
	s.mu.Lock()
	s.answer = f
	s.mu.Unlock()
}

// of is the attempts made at endpoint id.
func (s *sender) of(id string) []try {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []try
	for _, t := range s.tries {
		if t.endpoint == id {
			out = append(out, t)
		}
	}
	return out
}

func delivered(*webhooks.Endpoint, webhooks.Event) webhooks.Result {
	return webhooks.Result{Outcome: webhooks.Delivered, Status: 204}
}

// meter is a real SDK meter and its reader, for the endpoints gauge's two
// series.
func meter(t *testing.T) (metric.Meter, func() []metricdata.Metrics) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp.Meter("test"), func() []metricdata.Metrics {
		var rm metricdata.ResourceMetrics
		if err := r.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		var out []metricdata.Metrics
		for _, sm := range rm.ScopeMetrics {
			out = append(out, sm.Metrics...)
		}
		return out
	}
}

// point is the int64 value of name's data point with attribute key=value.
func point(t *testing.T, ms []metricdata.Metrics, name, key, value string) int64 {
	t.Helper()
	for _, m := range ms {
		if m.Name != name {
			continue
		}
		var dps []metricdata.DataPoint[int64]
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			dps = d.DataPoints
		case metricdata.Gauge[int64]:
			dps = d.DataPoints
		}
		for _, dp := range dps {
			if v, ok := dp.Attributes.Value(attribute.Key(key)); ok && v.AsString() == value {
				return dp.Value
			}
		}
	}
	t.Fatalf("no %s{%s=%q}", name, key, value)
	return 0
}

// harness is a Deliverer over a Memory, a feed and a sender, running in
// the test's synctest bubble until stop. Its clock is the bubble's
// (time.Now in the bubble, which starts on a fixed instant), the one the
// feed stamps its events with and the tests read the schedule by.
type harness struct {
	mem  *webhooks.Memory
	feed *feed
	send *sender
	d    *webhooks.Deliverer
	stop func()
}

func start(t *testing.T, mem *webhooks.Memory, f *feed, s *sender, cfg webhooks.Config) *harness {
	t.Helper()
	cfg.Store, cfg.Source, cfg.Sender, cfg.Now = mem, f, s, time.Now
	if cfg.Poll == 0 {
		cfg.Poll = time.Minute
	}
	d, err := webhooks.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	h := &harness{mem: mem, feed: f, send: s, d: d}
	h.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	synctest.Wait()
	return h
}

func create(t *testing.T, mem *webhooks.Memory, id string) {
	t.Helper()
	err := mem.Create(context.Background(), webhooks.Endpoint{ID: id, KeyID: "key_" + id, URL: "https://" + id + ".partner.example/hook",
		Secret: webhooks.NewSecret(), CreatedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
}

func endpoint(t *testing.T, mem *webhooks.Memory, id string) webhooks.Endpoint {
	t.Helper()
	ep, err := mem.Endpoint(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ep
}

func ids(tries []try) string {
	var s []string
	for _, t := range tries {
		s = append(s, fmt.Sprintf("%s#%d", t.event, t.attempt))
	}
	return strings.Join(s, " ")
}

package redishooks

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
	"github.com/partner-edge/partner-edge/upstream/webhooks/webhookstest"
)

// feed is the events every endpoint receives, in order.
type feed struct {
	mu  sync.Mutex
	evs []webhooks.Event
}

func (f *feed) add(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range n {
		f.evs = append(f.evs, webhooks.Event{ID: fmt.Sprintf("evt_%03d", len(f.evs)+1), Body: []byte("{}")})
	}
}

func (f *feed) Read(_ context.Context, _ *webhooks.Endpoint, after string, limit int) ([]webhooks.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.evs, func(e webhooks.Event) bool { return e.ID == after }) + 1
	return slices.Clone(f.evs[i:min(len(f.evs), i+limit)]), nil
}

// sent counts the deliveries of the fleet, by endpoint and event.
type sent struct {
	mu sync.Mutex
	n  map[string]int
}

type sender struct{ s *sent }

func (x sender) Send(_ context.Context, ep *webhooks.Endpoint, ev webhooks.Event, _ int) webhooks.Result {
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	x.s.n[ep.ID+" "+ev.ID]++
	return webhooks.Result{Outcome: webhooks.Delivered, Status: 200}
}

// killable is a member's lease whose Release does nothing once killed,
// as after kill -9.
type killable struct {
	*Lease
	mu     sync.Mutex
	killed bool
}

func (k *killable) Release(ctx context.Context, id string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killed {
		return nil
	}
	return k.Lease.Release(ctx, id)
}

// testFleet: two members deliver two endpoints from the store and the
// leases in Redis: each event reaches each endpoint once. The member
// holding both leases dies, releasing nothing; the other takes its
// endpoints over once their leases run out (short here; the test waits
// for the deliveries, never for a fixed time), and each later event
// still arrives once.
func testFleet(t *testing.T, f form) {
	brand := f.brand()
	ctx := context.Background()
	s := f.store(t, brand, secret)
	eps := []webhooks.Endpoint{webhookstest.Endpoint("key_a", 1), webhookstest.Endpoint("key_b", 2)}
	for _, ep := range eps {
		ep.After = ""
		if err := s.Create(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	src, out := &feed{}, &sent{n: map[string]int{}}
	src.add(3)
	start := func(name string) (*killable, context.CancelFunc, chan struct{}) {
		l := &killable{Lease: f.lease(t, brand, name)}
		d, err := webhooks.New(webhooks.Config{Store: f.store(t, brand, secret), Source: src, Sender: sender{out},
			Lease: l, LeaseTTL: 600 * time.Millisecond, Poll: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); _ = d.Run(rctx) }()
		return l, cancel, done
	}
	one, stopOne, oneDone := start("one")
	upTo := func(last string) func() bool {
		return func() bool {
			for _, ep := range eps {
				if got, err := s.Endpoint(ctx, ep.ID); err != nil || got.After != last {
					return false
				}
			}
			return true
		}
	}
	onceEach := func(n int) {
		t.Helper()
		out.mu.Lock()
		defer out.mu.Unlock()
		for _, ep := range eps {
			for i := 1; i <= n; i++ {
				if c := out.n[fmt.Sprintf("%s evt_%03d", ep.ID, i)]; c != 1 {
					t.Errorf("%s received evt_%03d %d times, want once", ep.ID, i, c)
				}
			}
		}
	}
	// The first member alone takes both leases; the second, started once
	// they are held, waits.
	testkit.Eventually(t, "both endpoints delivered up to evt_003", upTo("evt_003"))
	_, stopTwo, twoDone := start("two")
	defer func() { stopTwo(); <-twoDone }()
	src.add(1)
	testkit.Eventually(t, "both endpoints delivered up to evt_004", upTo("evt_004"))
	onceEach(4)

	one.mu.Lock()
	one.killed = true
	one.mu.Unlock()
	stopOne()
	<-oneDone
	src.add(2)
	testkit.Eventually(t, "the living member delivers both endpoints up to evt_006", upTo("evt_006"))
	onceEach(6)
}

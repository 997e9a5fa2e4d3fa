package webhooks_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// leases is a fleet's leases in memory; member is one member's view.
type leases struct {
	mu   sync.Mutex
	held map[string]struct {
		by    string
		until time.Time
	}
}

type member struct {
	l      *leases
	name   string
	killed func() bool // true: Release does nothing, as after kill -9
}

var _ webhooks.Lease = member{}

func (m member) Hold(_ context.Context, id string, ttl time.Duration) (bool, error) {
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	if m.l.held == nil {
		m.l.held = map[string]struct {
			by    string
			until time.Time
		}{}
	}
	h, ok := m.l.held[id]
	if ok && h.by != m.name && time.Now().Before(h.until) {
		return false, nil
	}
	h.by, h.until = m.name, time.Now().Add(ttl)
	m.l.held[id] = h
	return true, nil
}

func (m member) Release(_ context.Context, id string) error {
	if m.killed != nil && m.killed() {
		return nil
	}
	m.l.mu.Lock()
	defer m.l.mu.Unlock()
	if m.l.held[id].by == m.name {
		delete(m.l.held, id)
	}
	return nil
}

// TestFleetDeliversOnceAcrossAKilledMember: two members on one store and
// one lease deliver each event to each endpoint once. The member
// delivering an endpoint dies mid-attempt, releasing nothing: the other
// takes over once the lease runs out, and only the event in flight is
// sent twice.
func TestFleetDeliversOnceAcrossAKilledMember(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, f := &webhooks.Memory{}, &feed{}
		create(t, mem, "whe_a")
		create(t, mem, "whe_b")
		f.add(3)
		var l leases
		var mu sync.Mutex
		dead := false
		killed := func() bool { mu.Lock(); defer mu.Unlock(); return dead }
		hang := make(chan struct{}) // the first member's attempt at evt_005 never ends
		first := &sender{answer: func(ep *webhooks.Endpoint, ev webhooks.Event) webhooks.Result {
			if ev.ID == "evt_005" {
				<-hang
				return webhooks.Result{Outcome: webhooks.Canceled}
			}
			return delivered(ep, ev)
		}}
		second := &sender{answer: delivered}
		one := start(t, mem, f, first, webhooks.Config{Lease: member{l: &l, name: "one", killed: killed}})
		two := start(t, mem, f, second, webhooks.Config{Lease: member{l: &l, name: "two"}})
		defer two.stop()

		all := func(id string) []try { return append(first.of(id), second.of(id)...) }
		for _, id := range []string{"whe_a", "whe_b"} {
			if got := ids(all(id)); got != "evt_001#1 evt_002#1 evt_003#1" {
				t.Fatalf("%s: the fleet sent %s, want each event once", id, got)
			}
		}
		if len(first.tries) != 6 { // the first member started first and took both leases
			t.Fatalf("the first member sent %d, the second %d", len(first.tries), len(second.tries))
		}
		time.Sleep(time.Hour) // the first member keeps its leases while it lives
		if len(second.tries) != 0 {
			t.Fatalf("the second member sent %s while the first lived", ids(second.tries))
		}
		f.add(2)
		one.d.Wake()
		two.d.Wake()
		synctest.Wait() // the first member hangs on evt_005 of both endpoints
		mu.Lock()
		dead = true
		mu.Unlock()
		killedAt := time.Now()
		stopped := make(chan struct{})
		go func() { one.stop(); close(stopped) }()
		synctest.Wait() // its context ended, its attempts still under way
		close(hang)
		<-stopped
		time.Sleep(time.Minute)
		for _, id := range []string{"whe_a", "whe_b"} {
			if got := ids(all(id)); got != "evt_001#1 evt_002#1 evt_003#1 evt_004#1 evt_005#1 evt_005#1" {
				t.Fatalf("%s: the fleet sent %s, want evt_005 twice only", id, got)
			}
			took := second.of(id)[0].at.Sub(killedAt)
			if took > webhooks.DefaultLeaseTTL*4/3 {
				t.Errorf("%s: the second member took over after %s, want within %s", id, took, webhooks.DefaultLeaseTTL*4/3)
			}
			if ep := endpoint(t, mem, id); ep.After != "evt_005" {
				t.Errorf("%s: progress after %s, want evt_005", id, ep.After)
			}
		}
	})
}

// TestFleetStoppedMemberReleases: a member stopped at shutdown releases
// its leases, and the other takes over at its next look, without waiting
// for them to run out.
func TestFleetStoppedMemberReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, f := &webhooks.Memory{}, &feed{}
		create(t, mem, "whe_a")
		f.add(1)
		var l leases
		first, second := &sender{answer: delivered}, &sender{answer: delivered}
		one := start(t, mem, f, first, webhooks.Config{Lease: member{l: &l, name: "one"}})
		two := start(t, mem, f, second, webhooks.Config{Lease: member{l: &l, name: "two"}})
		defer two.stop()
		one.stop()
		stoppedAt := time.Now()
		f.add(1)
		time.Sleep(time.Minute)
		tries := second.of("whe_a")
		if ids(first.of("whe_a")) != "evt_001#1" || ids(tries) != "evt_002#1" {
			t.Fatalf("the first member sent %s, the second %s", ids(first.of("whe_a")), ids(tries))
		}
		if took := tries[0].at.Sub(stoppedAt); took > webhooks.DefaultLeaseTTL/3 {
			t.Fatalf("the second member took over after %s, want within a look (%s)", took, webhooks.DefaultLeaseTTL/3)
		}
	})
}

func TestNewNeedsItsParts(t *testing.T) {
	for _, cfg := range []webhooks.Config{
		{},
		{Store: &webhooks.Memory{}, Source: &feed{}},
		{Store: &webhooks.Memory{}, Sender: &sender{}},
		{Source: &feed{}, Sender: &sender{}},
	} {
		if _, err := webhooks.New(cfg); err == nil {
			t.Errorf("New(%+v) made a Deliverer", cfg)
		}
	}
}

package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/webhooks"
)

// TestScheduleThenDisabled: an endpoint whose receiver never answers gets
// its first event eight times, each after the schedule's wait, the same
// event every time; then it is disabled with the class of the last
// failure, one log line and the metrics saying so. Meanwhile another
// endpoint gets every event at once, the old ones and those added later.
func TestScheduleThenDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, f := &webhooks.Memory{}, &feed{}
		create(t, mem, "whe_slow")
		create(t, mem, "whe_ok")
		f.add(3)
		s := &sender{answer: func(ep *webhooks.Endpoint, ev webhooks.Event) webhooks.Result {
			if ep.ID == "whe_slow" {
				time.Sleep(webhooks.AttemptTimeout) // as an attempt that times out takes
				return webhooks.Result{Outcome: webhooks.FailedTimeout}
			}
			return delivered(ep, ev)
		}}
		log, logs := testkit.NewLogger()
		m, read := meter(t)
		t0 := time.Now()
		h := start(t, mem, f, s, webhooks.Config{Log: log, Meter: m})
		defer h.stop()

		if got := ids(s.of("whe_ok")); got != "evt_001#1 evt_002#1 evt_003#1" {
			t.Fatalf("the answering endpoint got %s", got)
		}
		for _, tr := range s.of("whe_ok") {
			if !tr.at.Equal(t0) {
				t.Fatalf("the answering endpoint got %s at +%s, want at once", tr.event, tr.at.Sub(t0))
			}
		}
		time.Sleep(time.Hour)
		f.add(2)
		h.d.Wake()
		synctest.Wait()
		if got := ids(s.of("whe_ok")); got != "evt_001#1 evt_002#1 evt_003#1 evt_004#1 evt_005#1" {
			t.Fatalf("the answering endpoint got %s", got)
		}
		if last := s.of("whe_ok")[4]; !last.at.Equal(t0.Add(time.Hour)) {
			t.Fatalf("an event added at +1h was delivered at +%s", last.at.Sub(t0))
		}

		time.Sleep(30 * time.Hour)
		synctest.Wait()
		tries := s.of("whe_slow")
		if got := ids(tries); got != "evt_001#1 evt_001#2 evt_001#3 evt_001#4 evt_001#5 evt_001#6 evt_001#7 evt_001#8" {
			t.Fatalf("the failing endpoint got %s", got)
		}
		waits := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}
		want := t0
		for i, tr := range tries {
			if i > 0 {
				want = want.Add(10*time.Second + waits[i-1]) // the attempt before took 10 s
			}
			if !tr.at.Equal(want) {
				t.Errorf("attempt %d at +%s, want +%s", i+1, tr.at.Sub(t0), want.Sub(t0))
			}
		}
		ep := endpoint(t, mem, "whe_slow")
		end := want.Add(webhooks.AttemptTimeout)
		if ep.Status != webhooks.StatusDisabled || ep.DisabledReason != "timeout" || !ep.DisabledAt.Equal(end) || ep.After != "" {
			t.Fatalf("after the schedule: %+v, want disabled for timeout at +%s, nothing delivered", ep, end.Sub(t0))
		}
		if n := logs.Count("webhooks: endpoint disabled"); n != 1 ||
			!(logs.Count("endpoint=whe_slow") == 1 && logs.Count("reason=timeout") == 1 && logs.Count("host=whe_slow.partner.example") == 1) {
			t.Fatalf("%d lines of a disabled endpoint, want 1 naming it, its host and reason:\n%s", n, logs)
		}
		ms := read()
		for outcome, want := range map[string]int64{"delivered": 5, "timeout": 8, "http_status": 0} {
			if got := point(t, ms, "partner_edge.webhooks.attempts", "outcome", outcome); got != want {
				t.Errorf("attempts{outcome=%s} = %d, want %d", outcome, got, want)
			}
		}
		if got := point(t, ms, "partner_edge.webhooks.disabled", "outcome", "timeout"); got != 1 {
			t.Errorf("disabled{outcome=timeout} = %d, want 1", got)
		}
		for status, want := range map[string]int64{"enabled": 1, "disabled": 1} {
			if got := point(t, ms, "partner_edge.webhooks.endpoints", "status", status); got != want {
				t.Errorf("endpoints{status=%s} = %d, want %d", status, got, want)
			}
		}
	})
}

// TestEnableResumesFromFirstUndelivered: a disabled endpoint enabled
// again gets the event it failed first, then the ones after, in order.
func TestEnableResumesFromFirstUndelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, f := &webhooks.Memory{}, &feed{}
		create(t, mem, "whe_a")
		f.add(2)
		fail := func(ep *webhooks.Endpoint, ev webhooks.Event) webhooks.Result {
			if ev.ID == "evt_001" {
				return delivered(ep, ev)
			}
			return webhooks.Result{Outcome: webhooks.FailedStatus, Status: 410}
		}
		s := &sender{answer: fail}
		h := start(t, mem, f, s, webhooks.Config{})
		defer h.stop()
		time.Sleep(30 * time.Hour)
		f.add(2)
		synctest.Wait()
		ep := endpoint(t, mem, "whe_a")
		if ep.Status != webhooks.StatusDisabled || ep.DisabledReason != "http_410" || ep.After != "evt_001" {
			t.Fatalf("%+v, want disabled for http_410 after evt_001", ep)
		}
		s.setAnswer(delivered)
		n := len(s.of("whe_a"))
		if _, err := mem.Enable(context.Background(), "whe_a", ep.After); err != nil {
			t.Fatal(err)
		}
		h.d.Wake()
		synctest.Wait()
		if got := ids(s.of("whe_a")[n:]); got != "evt_002#1 evt_003#1 evt_004#1" {
			t.Fatalf("enabled again, the endpoint got %s", got)
		}
		if ep := endpoint(t, mem, "whe_a"); ep.Status != webhooks.StatusEnabled || ep.DisabledReason != "" || ep.After != "evt_004" {
			t.Fatalf("%+v, want enabled after evt_004", ep)
		}
	})
}

// TestRetryThenDelivered: a failed event is tried again after 5 s and 5
// min with the same id; once delivered, the events after it follow at
// once, each from its first attempt.
func TestRetryThenDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, f := &webhooks.Memory{}, &feed{}
		create(t, mem, "whe_a")
		f.add(3)
		failures := 2
		s := &sender{}
		s.answer = func(ep *webhooks.Endpoint, ev webhooks.Event) webhooks.Result {
			if failures > 0 {
				failures--
				return webhooks.Result{Outcome: webhooks.FailedStatus, Status: 503}
			}
			return delivered(ep, ev)
		}
		m, read := meter(t)
		t0 := time.Now()
		h := start(t, mem, f, s, webhooks.Config{Meter: m})
		defer h.stop()
		if ep := endpoint(t, mem, "whe_a"); ep.Failures != 1 || !ep.NextAttempt.Equal(t0.Add(5*time.Second)) {
			t.Fatalf("after a failure: %+v, want the next attempt at +5s", ep.Progress)
		}
		h.d.Wake() // new events or not, a retry waits its time
		synctest.Wait()
		if n := len(s.of("whe_a")); n != 1 {
			t.Fatalf("%d attempts before the retry's time", n)
		}
		time.Sleep(time.Hour)
		tries := s.of("whe_a")
		if got := ids(tries); got != "evt_001#1 evt_001#2 evt_001#3 evt_002#1 evt_003#1" {
			t.Fatalf("got %s", got)
		}
		for i, want := range []time.Duration{0, 5 * time.Second, 5*time.Minute + 5*time.Second, 5*time.Minute + 5*time.Second, 5*time.Minute + 5*time.Second} {
			if got := tries[i].at.Sub(t0); got != want {
				t.Errorf("attempt %d at +%s, want +%s", i+1, got, want)
			}
		}
		if ep := endpoint(t, mem, "whe_a"); ep.Progress != (webhooks.Progress{After: "evt_003"}) {
			t.Fatalf("progress %+v, want after evt_003, no failures", ep.Progress)
		}
		lag := false
		for _, m := range read() {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "partner_edge.webhooks.lag" {
				// each event occurred at t0 and was delivered at +5m5s
				lag = len(h.DataPoints) == 1 && h.DataPoints[0].Count == 3 && h.DataPoints[0].Sum == 3*305
			}
		}
		if !lag {
			t.Error("the lag histogram does not hold 3 deliveries of 305 s")
		}
	})
}

// TestRestartResumesMidSchedule: a deliverer stopped between attempts,
// and another started on the same store, makes the next attempt at the
// time the schedule said, its number counting on.
func TestRestartResumesMidSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, f := &webhooks.Memory{}, &feed{}
		create(t, mem, "whe_a")
		f.add(1)
		s := &sender{answer: func(*webhooks.Endpoint, webhooks.Event) webhooks.Result {
			return webhooks.Result{Outcome: webhooks.FailedConnection}
		}}
		t0 := time.Now()
		h := start(t, mem, f, s, webhooks.Config{})
		time.Sleep(10 * time.Minute) // attempts at 0, 5s, 5m5s; the next at 35m5s
		h.stop()
		if n := len(s.of("whe_a")); n != 3 {
			t.Fatalf("%d attempts before the stop, want 3", n)
		}
		time.Sleep(time.Minute)
		h = start(t, mem, f, s, webhooks.Config{})
		defer h.stop()
		if n := len(s.of("whe_a")); n != 3 {
			t.Fatalf("restarted: an attempt at once, before the schedule's time")
		}
		time.Sleep(time.Hour)
		tries := s.of("whe_a")
		if len(tries) != 4 || tries[3].attempt != 4 || tries[3].at.Sub(t0) != 35*time.Minute+5*time.Second {
			t.Fatalf("after the restart: %s, the last at +%s; want attempt 4 at +35m5s", ids(tries), tries[len(tries)-1].at.Sub(t0))
		}
	})
}

// TestPausedAndExpired: a key that receives nothing makes no attempt and
// resumes where it stopped; a position the feed dropped disables the
// endpoint (events_expired).
func TestPausedAndExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, f := &webhooks.Memory{}, &feed{paused: map[string]bool{"key_whe_a": true}}
		create(t, mem, "whe_a")
		create(t, mem, "whe_b")
		f.add(2)
		s := &sender{answer: delivered}
		log, logs := testkit.NewLogger()
		h := start(t, mem, f, s, webhooks.Config{Log: log})
		defer h.stop()
		time.Sleep(time.Hour)
		if n := len(s.of("whe_a")); n != 0 {
			t.Fatalf("a paused key's endpoint got %d attempts", n)
		}
		f.mu.Lock()
		f.paused = nil
		f.mu.Unlock()
		h.d.Wake()
		synctest.Wait()
		if got := ids(s.of("whe_a")); got != "evt_001#1 evt_002#1" {
			t.Fatalf("resumed, got %s", got)
		}

		if err := mem.Disable(context.Background(), "whe_b", "evt_002", "http_500", time.Now()); err != nil {
			t.Fatal(err)
		}
		f.add(3)
		h.d.Wake()
		synctest.Wait() // whe_a delivers them
		f.mu.Lock()
		f.floor = 3 // evt_003 dropped: whe_b's position is gone
		f.mu.Unlock()
		if _, err := mem.Enable(context.Background(), "whe_b", "evt_002"); err != nil {
			t.Fatal(err)
		}
		h.d.Wake()
		synctest.Wait()
		if ep := endpoint(t, mem, "whe_b"); ep.Status != webhooks.StatusDisabled || ep.DisabledReason != "events_expired" {
			t.Fatalf("%+v, want disabled for events_expired", ep)
		}
		if logs.Count("reason=events_expired") != 1 {
			t.Fatalf("no line for the expired endpoint:\n%s", logs)
		}
	})
}

// TestDeletedEndpointStops: an endpoint deleted between attempts gets
// none after, and its goroutine ends (synctest.Test fails on one left).
func TestDeletedEndpointStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, f := &webhooks.Memory{}, &feed{}
		create(t, mem, "whe_a")
		f.add(1)
		s := &sender{answer: func(*webhooks.Endpoint, webhooks.Event) webhooks.Result {
			return webhooks.Result{Outcome: webhooks.FailedStatus, Status: 500}
		}}
		h := start(t, mem, f, s, webhooks.Config{})
		defer h.stop()
		time.Sleep(time.Minute) // attempts at 0 and 5s
		if err := mem.Delete(context.Background(), "whe_a"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Hour)
		if n := len(s.of("whe_a")); n != 2 {
			t.Fatalf("%d attempts, want the first and the one at +5s only", n)
		}
	})
}

// brokenStore takes no progress: every write fails with err.
type brokenStore struct {
	*webhooks.Memory
	err error
}

func (b brokenStore) SetProgress(context.Context, string, string, webhooks.Progress) error {
	return b.err
}

// TestStoreFailingWritesPaces: a store that takes no writes has the event
// sent again once a Poll, not as fast as the receiver answers, and logged
// at most once a minute; a store that is away (its client logged that)
// only at debug level.
func TestStoreFailingWritesPaces(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		warn bool
	}{
		{"failing", errors.New("disk full"), true},
		{"away", fmt.Errorf("%w: redis down", webhooks.ErrStoreUnavailable), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem, f := &webhooks.Memory{}, &feed{}
				create(t, mem, "whe_a")
				f.add(1)
				s := &sender{answer: delivered}
				log, logs := testkit.NewLogger()
				d, err := webhooks.New(webhooks.Config{Store: brokenStore{mem, c.err}, Source: f, Sender: s, Poll: 10 * time.Second, Log: log,
					Now: time.Now}) // the bubble's clock, as start's
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error)
				go func() { done <- d.Run(ctx) }()
				time.Sleep(10*time.Minute - time.Second)
				cancel()
				<-done
				if n := len(s.of("whe_a")); n != 60 {
					t.Errorf("%d attempts in 10 minutes, want one every 10 s", n)
				}
				if !c.warn {
					if n := logs.Count("WARN"); n != 0 {
						t.Errorf("%d warnings for a store that is away, want none (its client warns):\n%s", n, logs)
					}
					return
				}
				if n := logs.Count("cannot record a delivery"); n != 10 {
					t.Errorf("%d lines in 10 minutes, want one a minute:\n%s", n, logs)
				}
				if logs.Count("suppressed=5") != 9 {
					t.Errorf("the lines do not count those left out:\n%s", logs)
				}
			})
		})
	}
}

// countingStore counts the reads of one endpoint.
type countingStore struct {
	*webhooks.Memory
	reads atomic.Int64
}

func (c *countingStore) Endpoint(ctx context.Context, id string) (webhooks.Endpoint, error) {
	c.reads.Add(1)
	return c.Memory.Endpoint(ctx, id)
}

// TestIdleEndpointPollsTheFeedAlone: an endpoint with nothing to deliver
// reads the feed at each Poll, not the Store: an hour of minutes' polls
// reads it once; an event added without a Wake is delivered at the next
// Poll all the same, after the endpoint is read again.
func TestIdleEndpointPollsTheFeedAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, f := &webhooks.Memory{}, &feed{}
		create(t, mem, "whe_a")
		st := &countingStore{Memory: mem}
		s := &sender{answer: delivered}
		d, err := webhooks.New(webhooks.Config{Store: st, Source: f, Sender: s, Poll: time.Minute, Now: time.Now})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- d.Run(ctx) }()
		defer func() { cancel(); <-done }()
		time.Sleep(time.Hour)
		if n := st.reads.Load(); n != 1 {
			t.Fatalf("an idle hour read the endpoint %d times, want once", n)
		}
		f.add(1)
		time.Sleep(time.Minute)
		synctest.Wait() // the Poll due now done
		if got := ids(s.of("whe_a")); got != "evt_001#1" {
			t.Fatalf("after an event and a Poll, got %q", got)
		}
		if n := st.reads.Load(); n != 2 {
			t.Fatalf("the endpoint was read %d times, want once more before sending", n)
		}
		if ep := endpoint(t, mem, "whe_a"); ep.After != "evt_001" {
			t.Fatalf("progress %+v, want after evt_001", ep.Progress)
		}
	})
}

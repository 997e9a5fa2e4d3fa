package pms

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// The tests in this file run the client against the project's PMS
// simulator on loopback, faults switched on through its API.

func newSim(t *testing.T, cfg pmsim.Config) (*pmsim.Sim, *httptest.Server) {
	t.Helper()
	sim := pmsim.New(cfg)
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return sim, srv
}

func TestSimDirectReadsEveryPage(t *testing.T) {
	const n = 57
	sim, srv := newSim(t, pmsim.Config{HotelsPerBrand: n, PageSize: 7, Token: "pms-token-123", Seed: 42})
	var rejected atomic.Int64
	d := NewDirect(newTestClient(t, testConfig(srv.URL)), DirectOptions{
		Brand: "aurora", CodeSource: mapping.CodeSourceShortCode, Now: testkit.NewClock().Now,
		OnReject: func(context.Context, *mapping.Rejection) { rejected.Add(1) },
	})
	s, err := d.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Len(), n-pmsim.Unmappable(n); got != want {
		t.Errorf("mappable properties = %d, want %d", got, want)
	}
	if got, want := rejected.Load(), int64(pmsim.Unmappable(n)); got != want {
		t.Errorf("rejections = %d, want %d", got, want)
	}
	// Pages of 7, the last one asked again on a new connection (it came
	// on a reused one: confirm.go).
	if got, want := sim.ListRequests(), int64((n+6)/7)+1; got != want {
		t.Errorf("list requests = %d, want %d (pages of 7, the last one twice)", got, want)
	}
	for _, it := range s.Active {
		for _, leak := range pmsim.InternalFieldNames() {
			if json.Valid(it.JSON) && containsKey(it.JSON, leak) {
				t.Fatalf("item %s leaks %q", it.ID, leak)
			}
		}
	}

	// Every mappable record is found one by one, legacy upper-case ids by
	// their lower-case form, inactive ones included.
	for _, want := range append(append([]*upstream.Item{}, s.Active...), inactive(s)...) {
		got, err := d.Property(context.Background(), want.ID)
		if err != nil {
			t.Fatalf("Property(%s): %v", want.ID, err)
		}
		if string(got.JSON) != string(want.JSON) {
			t.Errorf("Property(%s) = %s, want %s", want.ID, got.JSON, want.JSON)
		}
	}
}

func inactive(s *upstream.Snapshot) []*upstream.Item {
	var out []*upstream.Item
	for _, it := range s.All() {
		if !it.Active {
			out = append(out, it)
		}
	}
	return out
}

func containsKey(obj []byte, key string) bool {
	var m map[string]any
	_ = json.Unmarshal(obj, &m)
	_, ok := m[key]
	return ok
}

func TestSimWrongTokenIsBadGateway(t *testing.T) {
	sim, srv := newSim(t, pmsim.Config{Token: "right"})
	cfg := testConfig(srv.URL)
	cfg.Token = "wrong"
	_, err := listHotels(newTestClient(t, cfg), context.Background(), "aurora")
	wantKind(t, err, upstream.BadGateway)
	if n := sim.Stats().Unauthorized; n != 1 {
		t.Errorf("unauthorized requests = %d, want 1 (a 401 is not retried)", n)
	}
}

// simCase is one row of the fault matrix against the simulator. A row runs
// in a testing/synctest bubble with the simulator served in process, so
// retry waits, Retry-After and deadlines pass on the bubble's clock and the
// elapsed time is exact whatever the machine's load; a row that needs a
// real connection (socket: a reset, a short body) runs on loopback and
// checks the outcome and the attempts, not the time.
type simCase struct {
	faults   pmsim.Faults
	cfg      func(*ClientConfig)
	get      bool   // GetHotel instead of ListHotels
	socket   bool   // on loopback, untimed
	code     string // the Kind's name; "" for success
	attempts int64
	minTime  time.Duration
	maxTime  time.Duration
}

func (sc simCase) run(t *testing.T) {
	t.Helper()
	if sc.socket {
		sim, srv := newSim(t, pmsim.Config{HotelsPerBrand: 20, Seed: 7})
		sc.check(t, sim, testConfig(srv.URL), false)
		return
	}
	synctest.Test(t, func(t *testing.T) {
		sim := pmsim.New(pmsim.Config{HotelsPerBrand: 20, Seed: 7})
		sc.check(t, sim, localConfig(sim), true)
	})
}

// check makes the call through cfg and checks its outcome; timed: its
// elapsed time too.
func (sc simCase) check(t *testing.T, sim *pmsim.Sim, cfg ClientConfig, timed bool) {
	t.Helper()
	sim.SetFaults(sc.faults)
	if sc.cfg != nil {
		sc.cfg(&cfg)
	}
	c := newTestClient(t, cfg)
	start := time.Now()
	var err error
	if sc.get {
		_, err = c.GetHotel(context.Background(), "aurora", hotelID(1))
	} else {
		_, err = listHotels(c, context.Background(), "aurora")
	}
	elapsed := time.Since(start)
	if sc.code == "" {
		if err != nil {
			t.Fatalf("err = %v, want success", err)
		}
	} else {
		if e := asError(t, err); e.Kind.String() != sc.code {
			t.Errorf("kind = %s, want %s", e.Kind, sc.code)
		}
	}
	if n := sim.Requests(); n != sc.attempts {
		t.Errorf("PMS attempts = %d, want %d", n, sc.attempts)
	}
	if timed && (elapsed < sc.minTime || elapsed > sc.maxTime) {
		t.Errorf("elapsed %v, want within [%v, %v]", elapsed, sc.minTime, sc.maxTime)
	}
}

func TestSimFaultMatrix(t *testing.T) {
	t.Parallel()
	for name, sc := range map[string]simCase{
		"500s": {faults: pmsim.Faults{ErrorStatus: 500},
			code: "bad_gateway", attempts: 3, maxTime: time.Second},
		"503 with Retry-After": {faults: pmsim.Faults{ErrorStatus: 503, RetryAfter: "1"},
			cfg:  func(c *ClientConfig) { c.CallTimeout, c.WalkTimeout = 5*time.Second, 5*time.Second },
			code: "unavailable", attempts: 3, minTime: 2 * time.Second, maxTime: 3500 * time.Millisecond},
		"429 with Retry-After beyond the cap": {faults: pmsim.Faults{ErrorStatus: 429, RetryAfter: "30"},
			code: "unavailable", attempts: 1, maxTime: 500 * time.Millisecond},
		"slow beyond the deadline": {faults: pmsim.Faults{Latency: 5 * time.Second},
			cfg: func(c *ClientConfig) {
				c.AttemptTimeout = 300 * time.Millisecond
				c.CallTimeout, c.WalkTimeout = 800*time.Millisecond, 800*time.Millisecond
			},
			code: "timeout", attempts: 3, minTime: 800 * time.Millisecond, maxTime: 1500 * time.Millisecond},
		"reset mid-body": {faults: pmsim.Faults{Reset: true}, socket: true,
			code: "bad_gateway", attempts: 3},
		"truncated body": {faults: pmsim.Faults{Truncate: true}, socket: true,
			code: "bad_gateway", attempts: 3},
		"malformed JSON": {faults: pmsim.Faults{Malformed: true},
			code: "bad_gateway", attempts: 1, maxTime: 500 * time.Millisecond},
		"malformed JSON on get": {faults: pmsim.Faults{Malformed: true}, get: true,
			code: "bad_gateway", attempts: 1, maxTime: 500 * time.Millisecond},
		"oversized body": {faults: pmsim.Faults{OversizeBytes: 64 << 10},
			cfg:  func(c *ClientConfig) { c.MaxBodyBytes = 32 << 10 },
			code: "bad_gateway", attempts: 1, maxTime: 500 * time.Millisecond},
		"flapping, heals within the retries": {faults: pmsim.Faults{FailFirst: 2, ErrorStatus: 503},
			attempts: 3, maxTime: time.Second},
		"flapping on get": {faults: pmsim.Faults{FailFirst: 2, ErrorStatus: 502}, get: true,
			code: "not_found", attempts: 3, maxTime: time.Second},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sc.run(t)
		})
	}
}

func TestSimBreakerStopsTrafficUntilHealed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testSimBreakerStopsTrafficUntilHealed)
}

// Under synctest, the simulator served in process: the open timeout
// passes on the bubble's clock.
func testSimBreakerStopsTrafficUntilHealed(t *testing.T) {
	sim := pmsim.New(pmsim.Config{HotelsPerBrand: 10})
	sim.SetFaults(pmsim.Faults{ErrorStatus: 503})
	cfg := localConfig(sim)
	cfg.Breaker = BreakerConfig{ConsecutiveFailures: 2, OpenTimeout: 2 * time.Second}
	c := newTestClient(t, cfg)
	d := NewDirect(c, DirectOptions{Brand: "aurora", Now: cfg.Now})
	ctx := context.Background()
	for range 2 {
		_, err := d.Snapshot(ctx)
		wantKind(t, err, upstream.BadGateway)
	}
	if n := sim.Requests(); n != 6 {
		t.Fatalf("PMS attempts = %d, want 6 (2 calls of 3 attempts)", n)
	}
	sim.ResetStats()
	for range 20 {
		_, err := d.Snapshot(ctx)
		pe := wantKind(t, err, upstream.Unavailable)
		if pe.RetryAfter != 2*time.Second {
			t.Errorf("RetryAfter %s, want 2s", pe.RetryAfter)
		}
		_, err = d.Property(ctx, hotelID(1))
		wantKind(t, err, upstream.Unavailable)
	}
	if n := sim.Requests(); n != 0 {
		t.Fatalf("PMS attempts while open = %d, want 0", n)
	}
	sim.Heal()
	time.Sleep(2100 * time.Millisecond) // the bubble's clock: past the 2 s open timeout
	s, err := d.Snapshot(ctx)
	if err != nil || s.Len() == 0 {
		t.Fatalf("after healing: %v, %v", s, err)
	}
	if st := c.BreakerState(); st != "closed" {
		t.Errorf("breaker %s, want closed", st)
	}
	if n := sim.Requests(); n != 1 {
		t.Errorf("PMS attempts for the probe = %d, want 1", n)
	}
}

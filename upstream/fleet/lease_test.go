package fleet

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	pmsclient "github.com/partner-edge/partner-edge/upstream/pms"

	"github.com/partner-edge/partner-edge/mapping"
	"github.com/partner-edge/partner-edge/observability/testkit"
	"github.com/partner-edge/partner-edge/upstream/pmsim"
)

// memRedis is the state a fleet shares, in memory, on the clock of a
// synctest bubble: one lease with its expiry, one publication.
type memRedis struct {
	mu         sync.Mutex
	holder     string
	until      time.Time
	payload    []byte
	version    int64
	publishes  int
	leaseCalls int
}

// memStore is one instance's handle on a memRedis (its own lease token).
// A crashed instance releases nothing (noRelease).
type memStore struct {
	r         *memRedis
	token     string
	noRelease bool
}

func (s *memStore) Lease(_ context.Context, _ string, ttl time.Duration) (bool, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.leaseCalls++
	if s.r.holder != "" && s.r.holder != s.token && time.Now().Before(s.r.until) {
		return false, nil
	}
	s.r.holder, s.r.until = s.token, time.Now().Add(ttl)
	return true, nil
}

func (s *memStore) Release(context.Context, string) error {
	if s.noRelease {
		return nil
	}
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.r.holder == s.token {
		s.r.holder = ""
	}
	return nil
}

func (s *memStore) Publish(_ context.Context, _ string, version int64, payload []byte, _ time.Duration) error {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.payload, s.r.version = payload, version
	s.r.publishes++
	return nil
}

func (s *memStore) Fetch(context.Context, string) ([]byte, int64, time.Time, error) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	if s.r.payload == nil {
		return nil, 0, time.Time{}, ErrNotFound
	}
	return s.r.payload, s.r.version, time.Now(), nil
}

// slowWalk is a PMS walk of 30 pages of one hotel, each page answered in
// 1 s (a 30 s walk), through the edge's own client and mapping; walks
// counts the walks that reached the PMS (first pages).
func slowWalk(t *testing.T, walks *atomic.Int64) LoadFunc {
	t.Helper()
	sim := pmsim.New(pmsim.Config{Brands: 1, HotelsPerBrand: 30, PageSize: 1, Seed: 3})
	pms := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/hotels") && !r.URL.Query().Has("cursor") {
			walks.Add(1)
		}
		time.Sleep(time.Second)
		sim.ServeHTTP(w, r)
	})
	client, err := pmsclient.NewClient(pmsclient.ClientConfig{BaseURL: "http://pms.test", Transport: testkit.InProcess{Handler: pms}})
	if err != nil {
		t.Fatal(err)
	}
	return pmsclient.NewDirect(client, pmsclient.DirectOptions{Brand: "aurora", Now: time.Now}).Properties
}

// The leader's lease lasts as long as its walk, renewed as pages arrive
// (docs/contract.md section 24): a 30 s walk under a 5 s lease is the
// fleet's one walk, the other instance waiting for its publication; and
// a leader that stops (no more pages, its lease never released) loses the
// lease 5 s after its last renewal, when the waiting instance takes over.
func TestLeaseLastsAsLongAsTheWalk(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var walks atomic.Int64
		walk := slowWalk(t, &walks)
		r := &memRedis{}
		coord := func(s *memStore) *Coordinator {
			return &Coordinator{Store: s, LeaseTTL: 5 * time.Second, PublishTTL: time.Minute, Wait: 10 * time.Minute,
				Poll: 50 * time.Millisecond, PollMax: time.Second}
		}
		a, b := coord(&memStore{r: r, token: "a"}), coord(&memStore{r: r, token: "b"})
		type res struct {
			l   Loaded
			err error
		}
		la, lb := make(chan res, 1), make(chan res, 1)
		start := time.Now()
		go func() { l, err := a.Load(t.Context(), "aurora", "live", time.Time{}, walk); la <- res{l, err} }()
		time.Sleep(time.Second)
		go func() { l, err := b.Load(t.Context(), "aurora", "live", time.Time{}, walk); lb <- res{l, err} }()
		ra, rb := <-la, <-lb
		if ra.err != nil || rb.err != nil || ra.l.Source != SourceLeader || rb.l.Source != SourceShared || len(rb.l.Properties) != len(ra.l.Properties) {
			t.Fatalf("a %v %v, b %v %v (%d properties); want a to lead and b to take its publication",
				ra.l.Source, ra.err, rb.l.Source, rb.err, len(rb.l.Properties))
		}
		if n := walks.Load(); n != 1 || time.Since(start) < 30*time.Second {
			t.Fatalf("%d walks in %v; want the one walk of 30 s", n, time.Since(start))
		}
	})
	synctest.Test(t, func(t *testing.T) {
		r := &memRedis{}
		stuck := make(chan struct{})
		defer close(stuck)
		crashed := &Coordinator{Store: &memStore{r: r, token: "a", noRelease: true}, LeaseTTL: 5 * time.Second}
		go func() {
			_, _ = crashed.Load(t.Context(), "aurora", "live", time.Time{},
				func(context.Context) ([]mapping.Property, time.Time, error) {
					<-stuck
					return nil, time.Time{}, context.Canceled
				})
		}()
		synctest.Wait()
		var walks atomic.Int64
		b := &Coordinator{Store: &memStore{r: r, token: "b"}, LeaseTTL: 5 * time.Second, Wait: 10 * time.Minute, PollMax: time.Second}
		start := time.Now()
		l, err := b.Load(t.Context(), "aurora", "live", time.Time{}, slowWalk(t, &walks))
		if err != nil || l.Source != SourceLeader || walks.Load() != 1 {
			t.Fatalf("%v %v, %d walks; want b to take the lease over and walk", l.Source, err, walks.Load())
		}
		if took := time.Since(start) - 30*time.Second; took < 5*time.Second-time.Millisecond || took > 6*time.Second {
			t.Fatalf("b walked %v after it began waiting; want the lease's 5 s (and a poll)", took)
		}
	})
}

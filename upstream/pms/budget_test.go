package pms

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partner-edge/partner-edge/upstream"

	"github.com/partner-edge/partner-edge/upstream/retrybudget"
)

// Under an outage, 100 concurrent calls make at most 100 attempts plus
// what the budget allows, not 300.
func TestBudgetBoundsAttemptsUnderOutage(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testBudgetBoundsAttemptsUnderOutage)
}

// Under synctest, the PMS served in process: retry waits and the floor's
// refill pass on the bubble's clock.
func testBudgetBoundsAttemptsUnderOutage(t *testing.T) {
	f := newLocalPMS(nil)
	f.fault = status(503)
	cfg := localConfig(f)
	rt := &countingRT{rt: cfg.Transport}
	cfg.Transport = rt
	cfg.Retry.Budget = retrybudget.New(retrybudget.Config{Ratio: 0.2, MinPerSecond: 5, Now: cfg.Now})
	// Keep the breaker out of the way: this test is about the budget.
	cfg.Breaker = BreakerConfig{ConsecutiveFailures: math.MaxUint32, FailureRatio: 2}
	c := newTestClient(t, cfg)

	const calls = 100
	var wg sync.WaitGroup
	errs := make(chan error, calls)
	start := time.Now()
	for range calls {
		wg.Go(func() {
			_, err := listHotels(c, context.Background(), "aurora")
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		wantKind(t, err, upstream.BadGateway)
	}
	// 20% of 100 requests, plus the floor's burst of 5 and what it refills
	// while the test runs.
	budget := int64(20 + 5 + 5*int(math.Ceil(time.Since(start).Seconds())))
	n := rt.n.Load()
	if n < calls || n > calls+budget {
		t.Errorf("PMS attempts = %d, want within [%d, %d]", n, calls, calls+budget)
	}
	t.Logf("%d calls made %d attempts (without a budget: up to %d)", calls, n, 3*calls)
}

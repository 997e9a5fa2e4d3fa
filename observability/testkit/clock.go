package testkit

import (
	"sync"
	"testing"
	"time"
)

// Epoch is the time NewClock starts at: a fixed instant, so failures read
// the same from run to run.
var Epoch = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

// Clock is a settable clock, safe for concurrent use: inject its Now
// where the code under test takes a func() time.Time. It moves only when
// the test moves it.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at Epoch.
func NewClock() *Clock { return NewClockAt(Epoch) }

// NewClockAt returns a clock at t.
func NewClockAt(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t (backwards too).
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Advance moves the clock d forward.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// From returns a clock that reads t0 now and then moves with the wall
// clock: t0 plus the time since From was called. It is the clock to give
// a component whose dates must sit on a test's fixed day (a feed's
// retention, a key's expiry, a cache's ages against snapshots stamped on
// that day) while its timing logic (breakers, timeouts, retry budgets,
// fetch pacing, durations) goes on as on the wall clock: a stopped Clock
// would hold a breaker open and a budget's window still for ever. Made
// inside a testing/synctest bubble it moves with the bubble's clock.
//
// Its dates are not the wall clock's: a component must not compare them
// with a context's deadline or a timer, which run on time.Now.
func From(t0 time.Time) func() time.Time {
	start := time.Now()
	return func() time.Time { return t0.Add(time.Since(start)) }
}

// EventuallyTimeout bounds Eventually: generous, because the machine may
// be busy (the race detector, -count=3, other processes: a walk of the
// real-speed PMS took over 30 s beside two busy loops), and reached only
// when the test fails.
const EventuallyTimeout = 2 * time.Minute

// Eventually polls cond until it holds, and fails t (naming what was
// awaited) if it still does not after EventuallyTimeout. It is for events
// outside the test's control (a process listening, a file watcher firing,
// a span ending just after its answer), never for a timer of the code
// under test: inject a clock or use testing/synctest for those.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(EventuallyTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so after %s", what, EventuallyTimeout)
		}
		time.Sleep(5 * time.Millisecond) // the outside event: poll again soon
	}
}

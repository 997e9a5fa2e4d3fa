package testkit

import (
	"sync"
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

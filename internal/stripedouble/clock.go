package stripedouble

import (
	"sync"
	"time"
)

// ManualClock is a clock that moves only when told, for Options.Clock
// and for whatever else in a test must agree with the double's time.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock starts a clock at t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t} }

// Now is the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Add moves the clock by d: forward, or back for a negative d (a clock
// stepped back, as NTP may).
func (c *ManualClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

package events

import (
	"log/slog"
	"time"
)

// The sequencer gives committed events their public ids and creates their
// webhook deliveries (see the package comment for why and how). What it
// takes differs by dialect, so each store runs its own: PostgreSQL's
// elects a leader, numbers in passes recorded in event_batches and tells
// every instance by a notification (sequencer_postgres.go); SQLite's only
// creates the deliveries of events whose seq is their id
// (store_sqlite.go). Both report to the Service through a sequencing.

// sequencing is what a store's sequencer tells the Service, and what it
// is told.
type sequencing struct {
	// numbered: the events up to top are numbered and visible, and
	// deliveries says whether webhook deliveries were created with them.
	numbered func(top int64, deliveries bool)
	// missed: notifications may have been lost (a new session); the hub
	// should look at the outbox itself.
	missed func()
	// leading: this instance numbers events now, or no longer.
	leading func(bool)
	// wake: a write committed on this instance (SQLite numbers at once).
	wake <-chan struct{}
	// poll: how often SQLite's sequencer looks without being woken.
	poll time.Duration
	now  func() time.Time
	log  *slog.Logger
}

// pollBusy is how often the PostgreSQL leader looks for committed events
// while events come, and how long SQLite's sequencer lets the writes of
// the next few milliseconds join a pass: about the longest an event waits
// for its number. A longer wait makes fewer, larger passes.
const pollBusy = 50 * time.Millisecond

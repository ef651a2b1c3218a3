package intake_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
)

// TestRetryPagesReadTheirIndex: with 20,000 events applied and 2,000
// waiting in the retry window, stored in the order they came (on
// PostgreSQL analyzed, so that the planner expects a backlog), both pages
// of the retrier's walk read an index in the walk's order from where the
// page starts: the next page's scan is bounded by its cursor, not a walk
// from the newest event that filters out every row newer than the cursor
// (half a million rows at the middle of a backlog of 30,000 among
// 1,000,000: docs/benchmarks/2026-12-08-intake-retrier-index.md). SQLite,
// without statistics, reads idx_processor_events_waiting.
func TestRetryPagesReadTheirIndex(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		at := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
		// The events come a second apart, the oldest first; every eleventh
		// waits.
		events := make([]models.ProcessorEvent, 22000)
		for i := range events {
			received := at.Add(-time.Duration(len(events)-i) * time.Second)
			events[i] = models.ProcessorEvent{ID: fmt.Sprintf("evt_%05d", i), Processor: "stripe",
				Type: "payment_intent.succeeded", PaymentReference: fmt.Sprintf("pi_%d", i%5000),
				Created: received, ReceivedAt: received, Payload: "{}"}
			if i%11 != 0 {
				events[i].AppliedAt = &received
			}
		}
		if err := db.Gorm.CreateInBatches(events, 500).Error; err != nil {
			t.Fatal(err)
		}
		if db.Dialect == "postgres" {
			if err := db.Gorm.Exec("ANALYZE processor_events").Error; err != nil {
				t.Fatal(err)
			}
		}
		since, cursor := at.Add(-24*time.Hour), at.Add(-5*time.Hour)
		for _, c := range []struct {
			name string
			args []any
		}{
			{"unapplied", []any{64, since}},
			{"unapplied_after", []any{64, since, cursor, "evt_04000"}},
		} {
			plan := dbtest.Plan(t, db, intake.SQL(c.name), c.args...)
			if db.Dialect == "sqlite" {
				if !strings.Contains(plan, "USING INDEX idx_processor_events_waiting") || strings.Contains(plan, "TEMP B-TREE") {
					t.Errorf("%s does not read idx_processor_events_waiting in order:\n%s", c.name, plan)
				}
				if c.name == "unapplied_after" && !strings.Contains(plan, "(received_at,id)<(?,?)") {
					t.Errorf("%s does not start at the cursor:\n%s", c.name, plan)
				}
				continue
			}
			if fullSort.MatchString(plan) {
				t.Errorf("%s sorts every row it found:\n%s", c.name, plan)
			}
			if c.name == "unapplied" && !strings.Contains(plan, "idx_processor_events_waiting") {
				t.Errorf("%s does not read idx_processor_events_waiting:\n%s", c.name, plan)
			}
			if c.name == "unapplied_after" && !cursorBound.MatchString(plan) {
				t.Errorf("%s does not start its index scan at the cursor:\n%s", c.name, plan)
			}
		}
	})
}

// fullSort is a plan's Sort node: one that sorts every row it is given
// (an Incremental Sort only sorts ties of an order already read).
var fullSort = regexp.MustCompile(`(?m)^\s*(->\s+)?Sort\s+\(`)

// cursorBound is an index scan's condition that holds the cursor's time
// of receipt, 2026-12-07 05:00.
var cursorBound = regexp.MustCompile(`Index Cond: .*'2026-12-07 05:00:00\+00'`)

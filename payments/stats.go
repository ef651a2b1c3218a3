package payments

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// statsSQL is the overview's statements.
var statsSQL = sqlq.MustLoad(sqlFiles, "sql/stats.sql")

// labelCount is how many rows have one status or operation.
type labelCount struct {
	label string
	n     int
}

// Counts counts attempts by outcome.
type Counts struct {
	Created, Applied, Replayed, Rejected, Refused int
}

func (c *Counts) add(o Outcome, n int) {
	switch o {
	case OutcomeCreated:
		c.Created += n
	case OutcomeApplied:
		c.Applied += n
	case OutcomeReplayed:
		c.Replayed += n
	case OutcomeRejected:
		c.Rejected += n
	case OutcomeRefused:
		c.Refused += n
	}
}

// HourStats counts the attempts of one hour by outcome.
type HourStats struct {
	Start time.Time
	Counts
}

// Stats is an overview of recent attempts: totals and one bucket per hour,
// oldest first, the last one being the current (partial) hour.
type Stats struct {
	Counts
	Hours []HourStats
	// Unsettled counts the payments that wait for the processor
	// (PROCESSING) or their payer (PENDING) now, whatever their age, and
	// Unpaid those created in the window that ended with no money moved
	// (DECLINED, EXPIRED), by status.
	Unsettled, Unpaid map[Status]int
	// Waiting counts the captures, cancels and refunds sent to the
	// processor that it has not settled yet, whatever their age.
	Waiting map[Operation]int
}

// RecentStats counts the attempts of the last `hours` hours, per hour and
// outcome, the payments of those hours that ended unpaid, and the work
// waiting now. It reads the attempts' time index over that window only,
// and the waiting payments and operations through their own indexes: the
// cost follows the recent traffic and the waiting work, not the size of
// the history.
func (s *Service) RecentStats(ctx context.Context, hours int) (Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	now := s.now()
	first := now.Truncate(time.Hour).Add(-time.Duration(hours-1) * time.Hour)

	var (
		rows                      []hourCount
		waiting, ended, operating []labelCount
	)
	err := s.reads.Read(func(db *gorm.DB) error {
		r, err := s.store.runnerOn(db)
		if err != nil {
			return err
		}
		if rows, err = s.store.attemptCounts(ctx, r, first); err != nil {
			return err
		}
		if waiting, err = countBy(ctx, r, "waiting_counts"); err != nil {
			return err
		}
		if ended, err = countBy(ctx, r, "ended_counts", first); err != nil {
			return err
		}
		operating, err = countBy(ctx, r, "waiting_operations")
		return err
	})
	if err != nil {
		return Stats{}, fmt.Errorf("recent stats: %w", err)
	}

	st := Stats{Hours: make([]HourStats, hours), Unsettled: map[Status]int{}, Unpaid: map[Status]int{}, Waiting: map[Operation]int{}}
	for _, c := range waiting {
		st.Unsettled[Status(c.label)] = c.n
	}
	for _, c := range ended {
		st.Unpaid[Status(c.label)] = c.n
	}
	for _, c := range operating {
		st.Waiting[Operation(c.label)] = c.n
	}
	for i := range st.Hours {
		st.Hours[i].Start = first.Add(time.Duration(i) * time.Hour)
	}
	base := first.Unix() / 3600
	for _, r := range rows {
		i := int(r.Hour - base)
		if i < 0 || i >= hours {
			continue // an attempt stamped ahead of this instance's clock
		}
		st.Hours[i].add(Outcome(r.Outcome), r.N)
		st.add(Outcome(r.Outcome), r.N)
	}
	return st, nil
}

// countBy runs the overview's statement name, which counts rows by one
// label.
func countBy(ctx context.Context, r sqlq.Runner, name string, args ...any) ([]labelCount, error) {
	return sqlq.Collect(ctx, r, statsSQL.SQL(name), args, func(row sqlq.Row) (labelCount, error) {
		var c labelCount
		return c, row.Scan(&c.label, &c.n)
	})
}

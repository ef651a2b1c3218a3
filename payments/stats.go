package payments

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/sqlq"
)

// statusCount is how many payments of the window are in one status.
type statusCount struct {
	status Status
	n      int
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
	// Unsettled counts the payments created in the window that wait for
	// the processor (PROCESSING) or their payer (PENDING), and Unpaid
	// those that ended with no money moved (DECLINED, EXPIRED), by status.
	Unsettled, Unpaid map[Status]int
}

// RecentStats counts the attempts of the last `hours` hours, per hour and
// outcome. It reads the attempts' time index over that window only: the
// cost follows the recent traffic, not the size of the history.
func (s *Service) RecentStats(ctx context.Context, hours int) (Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	now := s.now()
	first := now.Truncate(time.Hour).Add(-time.Duration(hours-1) * time.Hour)

	var rows []hourCount
	var statuses []statusCount
	err := s.reads.Read(func(db *gorm.DB) error {
		r, err := s.store.runnerOn(db)
		if err != nil {
			return err
		}
		if rows, err = s.store.attemptCounts(ctx, r, first); err != nil {
			return err
		}
		statuses, err = sqlq.Collect(ctx, r, commonSQL.SQL("status_counts"), []any{first}, func(row sqlq.Row) (statusCount, error) {
			var c statusCount
			return c, row.Scan(&c.status, &c.n)
		})
		return err
	})
	if err != nil {
		return Stats{}, fmt.Errorf("recent stats: %w", err)
	}

	st := Stats{Hours: make([]HourStats, hours), Unsettled: map[Status]int{}, Unpaid: map[Status]int{}}
	for _, c := range statuses {
		switch c.status {
		case StatusProcessing, StatusPending:
			st.Unsettled[c.status] = c.n
		default:
			st.Unpaid[c.status] = c.n
		}
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

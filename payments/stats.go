package payments

import (
	"context"
	"fmt"
	"time"
)

// HourStats counts the attempts of one hour by outcome.
type HourStats struct {
	Start                       time.Time
	Created, Replayed, Rejected int
}

// Stats is an overview of recent attempts: totals and one bucket per hour,
// oldest first, the last one being the current (partial) hour.
type Stats struct {
	Created, Replayed, Rejected int
	Hours                       []HourStats
}

// RecentStats counts the attempts of the last `hours` hours, per hour and
// outcome. It reads the attempts' time index over that window only: the
// cost follows the recent traffic, not the size of the history.
func (s *Service) RecentStats(ctx context.Context, hours int) (Stats, error) {
	now := s.now()
	first := now.Truncate(time.Hour).Add(-time.Duration(hours-1) * time.Hour)

	// The hour an attempt falls in, as a number, in each dialect's words.
	hourOf := "CAST(strftime('%s', substr(at, 1, 19)) AS INTEGER) / 3600"
	if s.postgres {
		hourOf = "CAST(floor(extract(epoch FROM at) / 3600) AS BIGINT)"
	}
	var rows []struct {
		Hour    int64
		Outcome string
		N       int
	}
	err := s.db.WithContext(ctx).Raw(`SELECT `+hourOf+` AS hour, outcome, COUNT(*) AS n
		FROM idempotency_attempts WHERE at >= ? GROUP BY 1, 2`, first).Scan(&rows).Error
	if err != nil {
		return Stats{}, fmt.Errorf("recent stats: %w", err)
	}

	st := Stats{Hours: make([]HourStats, hours)}
	for i := range st.Hours {
		st.Hours[i].Start = first.Add(time.Duration(i) * time.Hour)
	}
	base := first.Unix() / 3600
	for _, r := range rows {
		i := int(r.Hour - base)
		if i < 0 || i >= hours {
			continue // an attempt stamped ahead of this instance's clock
		}
		h := &st.Hours[i]
		switch Outcome(r.Outcome) {
		case OutcomeCreated:
			h.Created += r.N
			st.Created += r.N
		case OutcomeReplayed:
			h.Replayed += r.N
			st.Replayed += r.N
		case OutcomeRejected:
			h.Rejected += r.N
			st.Rejected += r.N
		}
	}
	return st, nil
}

package events

import (
	"context"
	"fmt"
	"time"
)

// sweepBatch is how many rows one sweep statement deletes at most.
const sweepBatch = 1000

// runSweeper deletes old events and finished deliveries every sweep
// interval, on the leader only (one instance sweeps, none waits on
// another's deletes).
func (s *Service) runSweeper(ctx context.Context) {
	tick := time.NewTicker(s.sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !s.Leader() {
			continue
		}
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("events: sweep old events", "err", err)
		}
	}
}

// Sweep deletes, oldest first and in batches, the events older than the
// retention and the finished webhook deliveries (and their attempts)
// older than it, and says how many events it deleted. It keeps:
//   - events not yet numbered;
//   - events a delivery is still pending for;
//   - the newest event, whatever its age, so that the highest id given
//     never falls and no id is ever given twice.
func (s *Service) Sweep(ctx context.Context) (int64, error) {
	cutoff := s.now().Add(-s.retention)
	db := s.db.WithContext(ctx)
	// Finished deliveries, oldest first by id, which follows their
	// creation: the scan stops at the first one young enough to keep.
	var from int64
	for {
		var batch []struct {
			ID        int64
			Status    string
			CreatedAt time.Time
		}
		err := db.Raw(`SELECT id, status, created_at FROM webhook_deliveries WHERE id > ? ORDER BY id LIMIT ?`,
			from, sweepBatch).Scan(&batch).Error
		if err != nil {
			return 0, fmt.Errorf("sweep deliveries: %w", err)
		}
		var old []int64
		done := len(batch) < sweepBatch
		for _, d := range batch {
			if !d.CreatedAt.Before(cutoff) {
				done = true
				break
			}
			if d.Status != "PENDING" {
				old = append(old, d.ID)
			}
			from = d.ID
		}
		if len(old) > 0 {
			if err := db.Exec(`DELETE FROM webhook_attempts WHERE delivery_id IN ?`, old).Error; err != nil {
				return 0, fmt.Errorf("sweep delivery attempts: %w", err)
			}
			if err := db.Exec(`DELETE FROM webhook_deliveries WHERE id IN ? AND status <> 'PENDING'`, old).Error; err != nil {
				return 0, fmt.Errorf("sweep deliveries: %w", err)
			}
		}
		if done || ctx.Err() != nil {
			break
		}
	}
	// Events oldest first by id: ids follow time, so the scan stops at
	// the first event young enough to keep, without an index on at.
	var total int64
	from = 0
	for {
		var batch []struct {
			ID int64
			At time.Time
		}
		err := db.Raw(`SELECT id, at FROM payment_events WHERE id > ? ORDER BY id LIMIT ?`, from, sweepBatch).Scan(&batch).Error
		if err != nil {
			return total, fmt.Errorf("sweep events: %w", err)
		}
		var old []int64
		done := len(batch) < sweepBatch
		for _, e := range batch {
			if !e.At.Before(cutoff) {
				done = true
				break
			}
			old = append(old, e.ID)
		}
		if len(old) > 0 {
			res := db.Exec(`DELETE FROM payment_events WHERE id IN ?
				AND id < (SELECT MAX(id) FROM payment_events WHERE id IS NOT NULL)
				AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = payment_events.id AND d.status = 'PENDING')`, old)
			if res.Error != nil {
				return total, fmt.Errorf("sweep events: %w", res.Error)
			}
			total += res.RowsAffected
			from = old[len(old)-1]
		}
		if done || ctx.Err() != nil {
			return total, nil
		}
	}
}

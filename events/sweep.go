package events

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
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
//   - events not yet numbered (on SQLite, not yet given their deliveries);
//   - events a delivery is still pending for;
//   - the newest event (on PostgreSQL, the newest pass), whatever its age,
//     so that the highest id given never falls and no id is given twice.
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
	if s.dialect == "postgres" {
		return s.sweepBatches(ctx, cutoff)
	}
	// SQLite: events oldest first by seq (their id), which follows time,
	// so the scan stops at the first event young enough to keep.
	var total int64
	from = 0
	for {
		var batch []struct {
			Seq int64
			At  time.Time
		}
		err := db.Raw(`SELECT seq, at FROM payment_events WHERE seq > ? ORDER BY seq LIMIT ?`, from, sweepBatch).Scan(&batch).Error
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
			old = append(old, e.Seq)
		}
		if len(old) > 0 {
			res := db.Exec(`DELETE FROM payment_events WHERE seq IN ?
				AND seq < (SELECT MAX(seq) FROM payment_events)
				AND seq <= (SELECT frontier FROM event_cursors WHERE name = 'deliveries')
				AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = payment_events.seq AND d.status = 'PENDING')`, old)
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

// sweepBatches deletes, on PostgreSQL, the oldest passes' events and their
// batch rows, a pass at a time, while every event of the pass is older than
// cutoff; a pass with a pending delivery is kept (and the sweep goes on
// past it), and so is the newest pass, whose last_id the next pass counts
// from.
func (s *Service) sweepBatches(ctx context.Context, cutoff time.Time) (int64, error) {
	var total int64
	err := withPgx(ctx, s.sqlDB, func(c *pgx.Conn) error {
		var from int64
		for ctx.Err() == nil {
			rows, err := c.Query(ctx, `SELECT b.last_id, b.seqs,
					(SELECT max(e.at) FROM payment_events e WHERE e.seq = ANY(b.seqs)),
					EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = ANY(b.seqs) AND d.status = 'PENDING')
				FROM event_batches b
				WHERE b.last_id > $1 AND b.last_id < (SELECT max(last_id) FROM event_batches)
				ORDER BY b.last_id LIMIT 100`, pgx.QueryExecModeExec, from)
			if err != nil {
				return err
			}
			type pass struct {
				last    int64
				seqs    []int64
				newest  *time.Time
				pending bool
			}
			passes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pass, error) {
				var p pass
				err := r.Scan(&p.last, &p.seqs, &p.newest, &p.pending)
				return p, err
			})
			if err != nil {
				return err
			}
			for _, p := range passes {
				if p.newest != nil && !p.newest.Before(cutoff) {
					return nil // from here on, events are young enough to keep
				}
				from = p.last
				if p.pending {
					continue
				}
				tag, err := c.Exec(ctx, `WITH gone AS (DELETE FROM payment_events WHERE seq = ANY($1))
					DELETE FROM event_batches WHERE last_id = $2`, p.seqs, p.last)
				if err != nil {
					return err
				}
				if tag.RowsAffected() == 1 {
					total += int64(len(p.seqs))
				}
			}
			if len(passes) < 100 {
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return total, fmt.Errorf("sweep events: %w", err)
	}
	return total, nil
}

// withPgx runs f on a pooled connection as pgx, which reads and writes
// PostgreSQL arrays as Go slices.
func withPgx(ctx context.Context, db *sql.DB, f func(*pgx.Conn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return driver.ErrBadConn
		}
		return f(c.Conn())
	})
}

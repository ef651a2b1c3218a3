package events

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
)

// The sequencer gives committed events their public ids (see the package
// comment for why and how). This file holds both dialects' passes and, for
// PostgreSQL, the session that elects the leader, listens and passes.

// deliveriesColumns are the columns a pass fills for each new delivery.
const deliveriesColumns = `event_id, endpoint_id, status, event_at, created_at, attempts, retries, next_attempt_at,
	claim_token, last_status, last_error`

// endpointMatches is the join condition between an event e and the
// endpoints w that receive it: not deleted, bound to no client or to the
// event's, and subscribed to every type or to the event's.
const endpointMatches = `w.deleted_at IS NULL AND (w.client_id = '' OR w.client_id = e.client_id)
	AND (w.event_types = '' OR w.event_types LIKE '%,' || e.type || ',%')`

// passPostgresSQL numbers the events $1 lists, in that order, skipping any
// already numbered; creates their deliveries; and, if it numbered any,
// tells every instance the new highest id. One statement: one round trip,
// one transaction. base is read in the statement's snapshot: only the
// leader numbers events, one pass at a time, and the unique index on id
// would refuse a second leader's pass rather than let it give an id twice.
const passPostgresSQL = `WITH ord AS (
	SELECT seq, ord FROM unnest($1::bigint[]) WITH ORDINALITY AS t(seq, ord)
), todo AS (
	SELECT e.seq, row_number() OVER (ORDER BY o.ord) AS rn
	FROM ord o JOIN payment_events e ON e.seq = o.seq
	WHERE e.id IS NULL
), base AS (
	SELECT COALESCE(max(id), 0) AS b FROM payment_events WHERE id IS NOT NULL
), done AS (
	UPDATE payment_events e SET id = base.b + todo.rn
	FROM todo, base WHERE e.seq = todo.seq
	RETURNING e.id, e.type, e.client_id, e.at
), delivery AS (
	INSERT INTO webhook_deliveries (` + deliveriesColumns + `)
	SELECT e.id, w.id, 'PENDING', e.at, $2::timestamptz, 0, 0, $2::timestamptz, 0, 0, ''
	FROM done e JOIN webhook_endpoints w ON ` + endpointMatches + `
	RETURNING 1
), total AS (
	SELECT COALESCE(max(id), 0) AS top, count(*) AS n FROM done
)
SELECT t.top, t.n, (SELECT count(*) FROM delivery),
       CASE WHEN t.n > 0 THEN (SELECT true FROM pg_notify($3::text, t.top::text || ':' || (SELECT count(*) FROM delivery)))
            ELSE false END
FROM total t`

// unsequencedSQL lists events committed but not yet numbered, in seq order.
const unsequencedSQL = `SELECT seq FROM payment_events WHERE id IS NULL ORDER BY seq LIMIT $1`

// listen keeps a leader session (or a would-be leader's) open until ctx
// ends, reconnecting after any error.
func (s *Service) listen(ctx context.Context) {
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		started := time.Now()
		err := s.session(ctx)
		s.leader.Store(false)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("events: listener connection lost; reconnecting", "err", err)
		if time.Since(started) > time.Minute {
			wait = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// session takes a connection of its own from the pool for as long as it
// runs, and discards it at the end: a connection that listens and may hold
// the leader's lock must never serve anything else.
func (s *Service) session(ctx context.Context) error {
	conn, err := s.sqlDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var serveErr error
	_ = conn.Raw(func(dc any) error {
		serveErr = s.serve(ctx, dc.(*stdlib.Conn).Conn())
		return driver.ErrBadConn // closes the connection instead of pooling it
	})
	return serveErr
}

// channels are the notification channels of the schema that holds
// payment_events, and the key of its leader's lock.
type channels struct {
	events, sequenced string
	lockKey           int64
}

func (s *Service) channels(ctx context.Context, c *pgx.Conn) (channels, error) {
	var schema string
	err := c.QueryRow(ctx, `SELECT n.nspname FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
		WHERE t.oid = 'payment_events'::regclass`).Scan(&schema)
	if err != nil {
		return channels{}, fmt.Errorf("find the outbox's schema: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte("cmpay events sequencer\x00" + schema))
	return channels{
		events:    database.EventsChannelPrefix + schema,
		sequenced: database.SequencedChannelPrefix + schema,
		lockKey:   int64(h.Sum64()),
	}, nil
}

// tryLeadEvery is how often an instance that is not the leader tries to
// become it: how long events wait for a number after a leader dies.
const tryLeadEvery = 250 * time.Millisecond

// serve listens on c for "sequenced" notifications (waking the hub), tries
// to become the leader, and as the leader listens for the writers'
// notifications and numbers their events in the order they arrive.
func (s *Service) serve(ctx context.Context, c *pgx.Conn) error {
	ch, err := s.channels(ctx, c)
	if err != nil {
		return err
	}
	if _, err := c.Exec(ctx, `LISTEN `+pgx.Identifier{ch.sequenced}.Sanitize()); err != nil {
		return err
	}
	// Notifications sent while this instance had no session are lost:
	// look at the outbox itself.
	s.hub.wakeUp()

	leader := false
	nextTry := time.Time{}
	// stuck are the unnumbered events seen at the last poll: still
	// unnumbered at the next one, they were committed without this leader
	// being told (which should not happen) and are numbered anyway.
	var stuck []int64
	for {
		now := time.Now()
		if !leader && !now.Before(nextTry) {
			if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, ch.lockKey).Scan(&leader); err != nil {
				return err
			}
			nextTry = now.Add(tryLeadEvery)
			if leader {
				if _, err := c.Exec(ctx, `LISTEN `+pgx.Identifier{ch.events}.Sanitize()); err != nil {
					return err
				}
				s.leader.Store(true)
				s.log.Info("events: this instance numbers events now")
				// Events committed before this leader listened were never
				// announced to it: number them first, in seq order.
				if err := s.passPostgres(ctx, c, ch, nil, true); err != nil {
					return err
				}
			}
		}
		// Wait for notifications, until the next poll or leadership try.
		until := now.Add(s.poll)
		if !leader {
			until = nextTry
		}
		waitCtx, cancel := context.WithDeadline(ctx, until)
		n, err := c.WaitForNotification(waitCtx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !pgconn.Timeout(err) && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			// A poll (the hub polls on its own): the leader numbers
			// anything stuck.
			if leader {
				if stuck, err = s.unstick(ctx, c, ch, stuck); err != nil {
					return err
				}
			}
			continue
		}

		// Take every notification that arrives within gather of the first,
		// in arrival order (the writers' ones are in commit order): under
		// load one pass then numbers the events of many statements.
		var seqs []int64
		all := false
		first := time.Now()
		for n != nil {
			switch n.Channel {
			case ch.events:
				if n.Payload == "*" {
					all = true
				}
				for _, f := range strings.Split(n.Payload, ",") {
					if v, err := strconv.ParseInt(f, 10, 64); err == nil {
						seqs = append(seqs, v)
					}
				}
			case ch.sequenced:
				// "<highest id>:<deliveries created>"
				top, deliveries, _ := strings.Cut(n.Payload, ":")
				id, _ := strconv.ParseInt(top, 10, 64)
				s.hub.announce(id, deliveries != "0")
			}
			if len(seqs) > 5000 || time.Since(first) > gather {
				break
			}
			n = nextNotification(ctx, c, gather-time.Since(first))
		}
		if leader && (len(seqs) > 0 || all) {
			if err := s.passPostgres(ctx, c, ch, seqs, all); err != nil {
				return err
			}
		}
	}
}

// gather is how long the leader waits for more notifications after one
// before it numbers their events: a few milliseconds more before an event
// is seen, against a pass (a statement, and a round of notifications to
// every instance) per writing statement.
const gather = 3 * time.Millisecond

// nextNotification returns the next notification, or nil if none comes
// within wait.
func nextNotification(ctx context.Context, c *pgx.Conn, wait time.Duration) *pgconn.Notification {
	if wait <= 0 {
		return nil
	}
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	n, err := c.WaitForNotification(waitCtx)
	if err != nil {
		return nil
	}
	return n
}

// passPostgres numbers the events seqs lists, in that order; with all, it
// first numbers every committed unnumbered event in seq order.
func (s *Service) passPostgres(ctx context.Context, c *pgx.Conn, ch channels, seqs []int64, all bool) error {
	if all {
		for {
			var pending []int64
			rows, err := c.Query(ctx, unsequencedSQL, 5000)
			if err != nil {
				return err
			}
			pending, err = pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return err
			}
			if len(pending) == 0 {
				break
			}
			if err := s.passPostgres(ctx, c, ch, pending, false); err != nil {
				return err
			}
			if len(pending) < 5000 {
				break
			}
		}
		if len(seqs) == 0 {
			return nil
		}
	}
	var top, n, deliveries int64
	var notified bool
	if err := c.QueryRow(ctx, passPostgresSQL, seqs, s.now(), ch.sequenced).Scan(&top, &n, &deliveries, &notified); err != nil {
		return fmt.Errorf("number events: %w", err)
	}
	s.sequenced.Add(n)
	return nil
}

// unstick numbers the events that were unnumbered at the previous poll and
// still are, and returns the ones unnumbered now for the next poll.
func (s *Service) unstick(ctx context.Context, c *pgx.Conn, ch channels, before []int64) ([]int64, error) {
	rows, err := c.Query(ctx, unsequencedSQL, 5000)
	if err != nil {
		return nil, err
	}
	now, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	var stuck, fresh []int64
	for _, seq := range now {
		if slices.Contains(before, seq) {
			stuck = append(stuck, seq)
		} else {
			fresh = append(fresh, seq)
		}
	}
	if len(stuck) > 0 {
		s.log.Warn("events: numbering events no notification announced", "count", len(stuck))
		if err := s.passPostgres(ctx, c, ch, stuck, false); err != nil {
			return nil, err
		}
	}
	return fresh, nil
}

// runSQLiteSequencer numbers events on SQLite whenever a write commits
// (Wake) and every poll interval besides.
func (s *Service) runSQLiteSequencer(ctx context.Context) {
	s.leader.Store(true)
	defer s.leader.Store(false)
	tick := time.NewTicker(s.poll)
	defer tick.Stop()
	for {
		if err := s.passSQLite(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("events: number events", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-tick.C:
		}
	}
}

// passSQLite numbers every unnumbered event: its id is its seq, since
// SQLite's one writer at a time makes insertion order commit order (and
// AUTOINCREMENT never gives a seq twice). It creates their deliveries in
// the same transaction, then wakes the hub.
func (s *Service) passSQLite(ctx context.Context) error {
	var lo, hi, n, deliveries int64
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var ids []int64
		if err := tx.Raw(`UPDATE payment_events SET id = seq WHERE id IS NULL RETURNING id`).Scan(&ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		lo, hi, n = slices.Min(ids), slices.Max(ids), int64(len(ids))
		now := s.now()
		res := tx.Exec(`INSERT INTO webhook_deliveries (`+deliveriesColumns+`)
			SELECT e.id, w.id, 'PENDING', e.at, ?, 0, 0, ?, 0, 0, ''
			FROM payment_events e JOIN webhook_endpoints w ON `+endpointMatches+`
			WHERE e.id BETWEEN ? AND ?`, now, now, lo, hi)
		deliveries = res.RowsAffected
		return res.Error
	})
	if err != nil {
		return fmt.Errorf("number events: %w", err)
	}
	if n > 0 {
		s.sequenced.Add(n)
		s.hub.announce(hi, deliveries > 0)
	}
	return nil
}

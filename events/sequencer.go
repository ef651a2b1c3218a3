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
	"gorm.io/gorm/clause"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/models"
)

// The sequencer gives committed events their public ids (see the package
// comment for why and how). This file holds both dialects' passes and, for
// PostgreSQL, the session that elects the leader and polls.

// deliveriesColumns are the columns a pass fills for each new delivery.
const deliveriesColumns = `event_id, event_seq, endpoint_id, status, event_at, created_at, attempts, retries,
	next_attempt_at, claim_token, last_status, last_error`

// endpointMatches is the join condition between an event e and the
// endpoints w that receive it: not deleted, bound to no client or to the
// event's, and subscribed to every type or to the event's.
const endpointMatches = `w.deleted_at IS NULL AND (w.client_id = '' OR w.client_id = e.client_id)
	AND (w.event_types = '' OR w.event_types LIKE '%,' || e.type || ',%')`

// Cursor names in event_cursors.
const (
	cursorSequencer  = "sequencer"  // PostgreSQL: the leader's frontier
	cursorDeliveries = "deliveries" // SQLite: the last event given deliveries
)

// pollPostgresSQL is one look at the outbox, in one snapshot: the oldest
// transaction still running (xmin); an xid above every xid assigned before
// the snapshot was taken (the poll's own, assigned while the statement
// runs, after its snapshot); and the committed events past the frontier
// $1, in seq order.
//
// Not the snapshot's xmax: that is one past the highest *completed* xid,
// and a transaction that had its xid (and then its event's seq) before the
// snapshot, but after the last one to complete, is at or above it. Moving
// the frontier by that xmax let such an event, committed later with a seq
// below the frontier, go unnumbered: TestWebhooksSurviveAKilledInstance
// lost one of 1,000 under load.
//
// The upper bound on seq is never reached (5000 rows come first); it makes
// the cached generic plan an index range scan (a bounded range is
// estimated narrow), where "seq > $1" alone would be estimated a third of
// the table.
const pollPostgresSQL = `SELECT pg_snapshot_xmin(s)::text::bigint, pg_current_xact_id()::text::bigint,
	ARRAY(SELECT seq FROM payment_events WHERE seq > $1 AND seq <= $1 + 1000000000 ORDER BY seq LIMIT 5000)
FROM pg_current_snapshot() AS s`

// passPostgresSQL numbers the events $1 lists (committed, not numbered
// yet), in that order: it records the batch (first_id = the last id given
// + 1, and on), creates their deliveries, and tells every instance the new
// highest id and whether deliveries were created. One statement: one round
// trip, one transaction, one row for the whole batch. The last id is read in the statement's snapshot: only the
// leader numbers events, one pass at a time, and the primary key on
// last_id would refuse a second leader's pass rather than give an id twice.
const passPostgresSQL = `WITH todo AS (
	SELECT seq, rn FROM unnest($1::bigint[]) WITH ORDINALITY AS t(seq, rn)
), base AS (
	SELECT COALESCE((SELECT last_id FROM event_batches ORDER BY last_id DESC LIMIT 1), 0) AS b
), batch AS (
	INSERT INTO event_batches (last_id, first_id, seqs)
	SELECT base.b + cardinality($1::bigint[]), base.b + 1, $1::bigint[] FROM base
	RETURNING last_id
), delivery AS (
	INSERT INTO webhook_deliveries (` + deliveriesColumns + `)
	SELECT base.b + t.rn, e.seq, w.id, 'PENDING', e.at, $2::timestamptz, 0, 0, $2::timestamptz, 0, 0, ''
	FROM todo t CROSS JOIN base JOIN payment_events e ON e.seq = t.seq JOIN webhook_endpoints w ON ` + endpointMatches + `
	RETURNING 1
), total AS (
	SELECT (SELECT last_id FROM batch) AS top, (SELECT count(*) FROM delivery) AS deliveries
)
SELECT t.top, t.deliveries, (SELECT true FROM pg_notify($3::text, t.top::text || ':' || t.deliveries))
FROM total t`

// saveCursorSQL saves the leader's state, about once a second: the
// frontier, the numbered seqs above it, and the last id given then ($3,
// in last_id). A new leader adds the seqs of the batches numbered since
// (the passes a leader made after its last save): their rows say which.
const saveCursorSQL = `INSERT INTO event_cursors (name, frontier, numbered, last_id) VALUES ('` + cursorSequencer + `', $1, $2, $3)
	ON CONFLICT (name) DO UPDATE SET frontier = EXCLUDED.frontier, numbered = EXCLUDED.numbered, last_id = EXCLUDED.last_id`

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
		s.log.Warn("events: sequencer connection lost; reconnecting", "err", err)
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

// schemaKeys are the notification channel of the schema that holds
// payment_events, and the key of its leader's lock.
type schemaKeys struct {
	sequenced string
	lockKey   int64
}

func schemaKeysOf(ctx context.Context, c *pgx.Conn) (schemaKeys, error) {
	var schema string
	err := c.QueryRow(ctx, `SELECT n.nspname FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
		WHERE t.oid = 'payment_events'::regclass`).Scan(&schema)
	if err != nil {
		return schemaKeys{}, fmt.Errorf("find the outbox's schema: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte("cmpay events sequencer\x00" + schema))
	return schemaKeys{sequenced: database.SequencedChannelPrefix + schema, lockKey: int64(h.Sum64())}, nil
}

// Timing of the PostgreSQL session.
const (
	// tryLeadEvery is how often an instance that is not the leader tries
	// to become it: how long events wait for a number after a leader dies.
	tryLeadEvery = 250 * time.Millisecond
	// pollBusy and pollIdle are how often the leader looks for committed
	// events: while events come, and when none came for a second. They are
	// about the longest an event waits for its number; a longer wait
	// makes fewer, larger passes.
	pollBusy = 50 * time.Millisecond
	pollIdle = 200 * time.Millisecond
	// saveEvery is how often the leader saves its state.
	saveEvery = time.Second
)

// serve listens on c for "sequenced" notifications (waking the hub), tries
// to become the leader, and as the leader polls and numbers.
func (s *Service) serve(ctx context.Context, c *pgx.Conn) error {
	keys, err := schemaKeysOf(ctx, c)
	if err != nil {
		return err
	}
	if _, err := c.Exec(ctx, `LISTEN `+pgx.Identifier{keys.sequenced}.Sanitize()); err != nil {
		return err
	}
	// Notifications sent while this instance had no session are lost:
	// look at the outbox itself.
	s.hub.wakeUp()

	var seq *sequencer
	next := time.Time{} // the next leadership try, or poll
	for {
		if now := time.Now(); !now.Before(next) {
			if seq == nil {
				var leader bool
				if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, keys.lockKey).Scan(&leader); err != nil {
					return err
				}
				next = now.Add(tryLeadEvery)
				if leader {
					if seq, err = s.newSequencer(ctx, c, keys); err != nil {
						return err
					}
					s.leader.Store(true)
					s.log.Info("events: this instance numbers events now")
					next = now
				}
			}
			if seq != nil {
				if err := seq.poll(ctx); err != nil {
					return err
				}
				next = time.Now().Add(seq.interval())
			}
		}
		waitCtx, cancel := context.WithDeadline(ctx, next)
		n, err := c.WaitForNotification(waitCtx)
		cancel()
		switch {
		case err == nil:
			// "<highest id>:<deliveries created>"
			top, deliveries, _ := strings.Cut(n.Payload, ":")
			id, _ := strconv.ParseInt(top, 10, 64)
			s.hub.announce(id, deliveries != "0")
		case ctx.Err() != nil:
			return nil
		case !pgconn.Timeout(err) && !errors.Is(err, context.DeadlineExceeded):
			return err
		}
	}
}

// sequencer is the leader's state: the frontier, below which every
// committed event is numbered and no other will ever commit, and the
// numbered events above it.
//
// The frontier moves by snapshots. A transaction that writes an event
// writes the change first (the event is fed by the change's own rows), so
// it has its xid before the event gets its seq. So every event with a seq
// up to the highest seq visible in snapshot S belongs to a transaction
// that had its xid before S was taken, and so below any xid assigned after
// it (the poll's own, pollPostgresSQL); once a later snapshot's xmin has
// passed that xid, all those transactions have ended, and the events with
// such seqs that are not visible yet never will be. Each poll records
// (that xid, its highest visible seq) and moves the frontier to the
// highest seq of the records an xmin has passed.
type sequencer struct {
	s        *Service
	c        *pgx.Conn
	keys     schemaKeys
	frontier int64
	numbered map[int64]bool // numbered seqs above the frontier
	marks    []mark         // oldest first
	lastNew  time.Time      // when a poll last found an event
	lastID   int64          // the last id given
	dirty    bool           // the state changed since it was saved
	savedAt  time.Time
}

type mark struct{ above, visible int64 } // above: an xid above every xid assigned before the poll's snapshot

// newSequencer takes up the state the previous leader saved, and the
// passes it made after saving it, so that this one carries on exactly
// where it stopped.
func (s *Service) newSequencer(ctx context.Context, c *pgx.Conn, keys schemaKeys) (*sequencer, error) {
	q := &sequencer{s: s, c: c, keys: keys, numbered: map[int64]bool{}, savedAt: time.Now()}
	var numbered string
	var savedLast int64
	err := c.QueryRow(ctx, `SELECT frontier, numbered, last_id FROM event_cursors WHERE name = $1`, cursorSequencer).
		Scan(&q.frontier, &numbered, &savedLast)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("read the sequencer's cursor: %w", err)
	}
	for _, f := range strings.Split(numbered, ",") {
		if v, err := strconv.ParseInt(f, 10, 64); err == nil {
			q.numbered[v] = true
		}
	}
	rows, err := c.Query(ctx, `SELECT u.seq FROM event_batches b CROSS JOIN LATERAL unnest(b.seqs) AS u(seq)
		WHERE b.last_id > $1 AND u.seq > $2`, pgx.QueryExecModeExec, savedLast, q.frontier)
	if err != nil {
		return nil, fmt.Errorf("read the passes after the sequencer's cursor: %w", err)
	}
	later, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read the passes after the sequencer's cursor: %w", err)
	}
	for _, seq := range later {
		q.numbered[seq] = true
	}
	if err := c.QueryRow(ctx, `SELECT COALESCE(MAX(last_id), 0) FROM event_batches`).Scan(&q.lastID); err != nil {
		return nil, fmt.Errorf("read the last event id: %w", err)
	}
	return q, nil
}

func (q *sequencer) interval() time.Duration {
	if time.Since(q.lastNew) < time.Second {
		return pollBusy
	}
	return pollIdle
}

// poll looks at the outbox once: it numbers, in seq order, the committed
// events past the frontier that are not numbered yet, and moves the
// frontier. The order is the order in which events became visible to the
// polls; within one poll (10 ms under load), the order of their inserts.
func (q *sequencer) poll(ctx context.Context) error {
	var xmin, above int64
	var visible []int64
	if err := q.c.QueryRow(ctx, pollPostgresSQL, q.frontier).Scan(&xmin, &above, &visible); err != nil {
		return fmt.Errorf("look for events: %w", err)
	}
	var fresh []int64
	highest := q.frontier
	for _, seq := range visible {
		highest = max(highest, seq)
		if !q.numbered[seq] {
			fresh = append(fresh, seq)
		}
	}
	if n := len(q.marks); n == 0 || q.marks[n-1].visible < highest {
		q.marks = append(q.marks, mark{above: above, visible: highest})
	}
	frontier := q.frontier
	for len(q.marks) > 0 && q.marks[0].above <= xmin {
		frontier = max(frontier, q.marks[0].visible)
		q.marks = q.marks[1:]
	}
	for _, seq := range fresh {
		q.numbered[seq] = true
	}
	if frontier != q.frontier {
		q.frontier, q.dirty = frontier, true
		for seq := range q.numbered {
			if seq <= frontier {
				delete(q.numbered, seq)
			}
		}
	}
	if len(fresh) > 0 {
		q.lastNew = time.Now()
		if err := q.pass(ctx, fresh); err != nil {
			return err
		}
	}
	if q.dirty && time.Since(q.savedAt) > saveEvery {
		if _, err := q.c.Exec(ctx, saveCursorSQL, q.frontier, q.numberedText(), q.lastID); err != nil {
			return fmt.Errorf("save the sequencer's cursor: %w", err)
		}
		q.dirty, q.savedAt = false, time.Now()
	}
	return nil
}

// pass numbers seqs, in that order.
func (q *sequencer) pass(ctx context.Context, seqs []int64) error {
	var top, deliveries int64
	var notified bool
	err := q.c.QueryRow(ctx, passPostgresSQL, seqs, q.s.now(), q.keys.sequenced).Scan(&top, &deliveries, &notified)
	if err != nil {
		return fmt.Errorf("number events: %w", err)
	}
	q.lastID, q.dirty = top, true
	return nil
}

func (q *sequencer) numberedText() string {
	seqs := make([]int64, 0, len(q.numbered))
	for seq := range q.numbered {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	parts := make([]string, len(seqs))
	for i, seq := range seqs {
		parts[i] = strconv.FormatInt(seq, 10)
	}
	return strings.Join(parts, ",")
}

// runSQLiteSequencer gives events their deliveries on SQLite shortly after
// a write commits (Wake), and every poll interval besides.
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
			// Let the writes of the next few milliseconds join this pass:
			// under load one pass serves many of them.
			select {
			case <-ctx.Done():
				return
			case <-time.After(pollBusy):
			}
		case <-tick.C:
		}
	}
}

// passSQLite serves SQLite, where an event's id is its seq: one writer at a
// time makes insertion order commit order (and AUTOINCREMENT never gives a
// seq twice), so an event is numbered the moment it commits. The pass
// creates the deliveries of the events past the cursor and moves it, in
// one transaction, then wakes the hub.
func (s *Service) passSQLite(ctx context.Context) error {
	for {
		var hi, n, deliveries int64
		err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var cursor models.EventCursor
			if err := tx.Where("name = ?", cursorDeliveries).Limit(1).Find(&cursor).Error; err != nil {
				return err
			}
			var seqs []int64
			if err := tx.Raw(`SELECT seq FROM payment_events WHERE seq > ? ORDER BY seq LIMIT 5000`, cursor.Frontier).Scan(&seqs).Error; err != nil {
				return err
			}
			if len(seqs) == 0 {
				return nil
			}
			hi, n = seqs[len(seqs)-1], int64(len(seqs))
			now := s.now()
			res := tx.Exec(`INSERT INTO webhook_deliveries (`+deliveriesColumns+`)
				SELECT e.seq, e.seq, w.id, 'PENDING', e.at, ?, 0, 0, ?, 0, 0, ''
				FROM payment_events e JOIN webhook_endpoints w ON `+endpointMatches+`
				WHERE e.seq > ? AND e.seq <= ?`, now, now, cursor.Frontier, hi)
			if res.Error != nil {
				return res.Error
			}
			deliveries = res.RowsAffected
			return tx.Clauses(clause.OnConflict{UpdateAll: true}).
				Create(&models.EventCursor{Name: cursorDeliveries, Frontier: hi}).Error
		})
		if err != nil {
			return fmt.Errorf("number events: %w", err)
		}
		if n == 0 {
			return nil
		}
		s.hub.announce(hi, deliveries > 0)
		if n < 5000 {
			return nil
		}
	}
}

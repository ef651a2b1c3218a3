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

	"github.com/cmpay/cmpay/internal/logrepeat"
	"github.com/cmpay/cmpay/internal/sqlq"
)

// PostgreSQL's sequencer: the session that elects the leader, listens for
// the passes of whichever instance leads, and as the leader polls and
// numbers (see the package comment for why and how).

// sequencedChannel names the notification channel on which the leader
// tells every instance that it numbered events, followed by the schema
// that holds payment_events (channels are per database, and several
// schemas may hold a CMPay each: the tests do). The payload is
// "<highest id>:<webhook deliveries created>".
const sequencedChannel = "cmpay_sequenced:"

// Timing of the PostgreSQL session.
const (
	// tryLeadEvery is how often an instance that is not the leader tries
	// to become it: how long events wait for a number after a leader dies.
	tryLeadEvery = 250 * time.Millisecond
	// pollIdle is how often the leader looks for committed events when
	// none came for a second (pollBusy while they come).
	pollIdle = 200 * time.Millisecond
	// saveEvery is how often the leader saves its state.
	saveEvery = time.Second
	// steadyAfter is how long a session listens before the log says the
	// sequencer works again.
	steadyAfter = 10 * time.Second
)

// sequence keeps a leader session (or a would-be leader's) open until ctx
// ends, reconnecting after any error.
func (st *postgresStore) sequence(ctx context.Context, to sequencing) {
	wait := 100 * time.Millisecond
	// A session that has listened for steadyAfter ends the run of failures
	// (missed is told when it starts listening): one that listens and dies
	// at once, again and again, is still failing.
	fails := &logrepeat.Failures{Logger: to.log, What: "events: sequencer connection lost; reconnecting"}
	var steady *time.Timer
	listening := to
	listening.missed = func() {
		steady = time.AfterFunc(steadyAfter, fails.OK)
		to.missed()
	}
	for ctx.Err() == nil {
		started := time.Now()
		err := st.session(ctx, listening)
		if steady != nil {
			steady.Stop()
		}
		to.leading(false)
		if ctx.Err() != nil {
			return
		}
		fails.Fail(err)
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
func (st *postgresStore) session(ctx context.Context, to sequencing) error {
	var serveErr error
	served := false
	err := st.pg.Conn(ctx, func(c *pgx.Conn) error {
		served, serveErr = true, st.serve(ctx, c, to)
		return driver.ErrBadConn // closes the connection instead of pooling it
	})
	if !served {
		return err
	}
	return serveErr
}

// schemaKeys are the notification channel of the schema that holds
// payment_events, and the key of its leader's lock.
type schemaKeys struct {
	sequenced string
	lockKey   int64
}

func (st *postgresStore) schemaKeys(ctx context.Context, r sqlq.Runner) (schemaKeys, error) {
	var schema string
	if err := r.QueryRow(ctx, st.q.SQL("outbox_schema")).Scan(&schema); err != nil {
		return schemaKeys{}, fmt.Errorf("find the outbox's schema: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte("cmpay events sequencer\x00" + schema))
	return schemaKeys{sequenced: sequencedChannel + schema, lockKey: int64(h.Sum64())}, nil
}

// serve listens on c for "sequenced" notifications (telling the Service),
// tries to become the leader, and as the leader polls and numbers.
func (st *postgresStore) serve(ctx context.Context, c *pgx.Conn, to sequencing) error {
	r := sqlq.Wrap(c)
	keys, err := st.schemaKeys(ctx, r)
	if err != nil {
		return err
	}
	if _, err := r.Exec(ctx, st.q.SQL("set_listen_channel"), keys.sequenced); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if _, err := r.Exec(ctx, st.q.SQL("listen")); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	// Notifications sent while this instance had no session are lost:
	// the Service looks at the outbox itself.
	to.missed()

	var seq *sequencer
	next := time.Time{} // the next leadership try, or poll
	for {
		if now := time.Now(); !now.Before(next) {
			if seq == nil {
				var leader bool
				if err := r.QueryRow(ctx, st.q.SQL("try_lead"), keys.lockKey).Scan(&leader); err != nil {
					return err
				}
				next = now.Add(tryLeadEvery)
				if leader {
					if seq, err = st.newSequencer(ctx, r, keys, to); err != nil {
						return err
					}
					to.leading(true)
					to.log.Info("events: this instance numbers events now")
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
			to.numbered(id, deliveries != "0")
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
// it (the poll's own, sql/postgres.sql: poll); once a later snapshot's
// xmin has passed that xid, all those transactions have ended, and the
// events with such seqs that are not visible yet never will be. Each poll
// records (that xid, its highest visible seq) and moves the frontier to
// the highest seq of the records an xmin has passed.
type sequencer struct {
	st       *postgresStore
	r        sqlq.Runner // the session's connection
	to       sequencing
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
func (st *postgresStore) newSequencer(ctx context.Context, r sqlq.Runner, keys schemaKeys, to sequencing) (*sequencer, error) {
	q := &sequencer{st: st, r: r, to: to, keys: keys, numbered: map[int64]bool{}, savedAt: time.Now()}
	var numbered string
	var savedLast int64
	err := r.QueryRow(ctx, st.q.SQL("read_cursor")).Scan(&q.frontier, &numbered, &savedLast)
	if err != nil && !errors.Is(err, sqlq.ErrNoRows) {
		return nil, fmt.Errorf("read the sequencer's cursor: %w", err)
	}
	for _, f := range strings.Split(numbered, ",") {
		if v, err := strconv.ParseInt(f, 10, 64); err == nil {
			q.numbered[v] = true
		}
	}
	later, err := sqlq.Collect(ctx, r, st.q.SQL("passes_since"), []any{pgx.QueryExecModeExec, savedLast, q.frontier},
		func(row sqlq.Row) (int64, error) {
			var seq int64
			err := row.Scan(&seq)
			return seq, err
		})
	if err != nil {
		return nil, fmt.Errorf("read the passes after the sequencer's cursor: %w", err)
	}
	for _, seq := range later {
		q.numbered[seq] = true
	}
	if err := r.QueryRow(ctx, st.q.SQL("last_id")).Scan(&q.lastID); err != nil {
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
	if err := q.r.QueryRow(ctx, q.st.q.SQL("poll"), q.frontier).Scan(&xmin, &above, &visible); err != nil {
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
		if _, err := q.r.Exec(ctx, q.st.q.SQL("save_cursor"), q.frontier, q.numberedText(), q.lastID); err != nil {
			return fmt.Errorf("save the sequencer's cursor: %w", err)
		}
		q.dirty, q.savedAt = false, time.Now()
	}
	return nil
}

// pass numbers seqs, in that order. The instances, this one too, learn
// of it from its notification.
func (q *sequencer) pass(ctx context.Context, seqs []int64) error {
	var top, deliveries int64
	var notified bool
	err := q.r.QueryRow(ctx, q.st.q.SQL("pass"), seqs, q.to.now(), q.keys.sequenced).Scan(&top, &deliveries, &notified)
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

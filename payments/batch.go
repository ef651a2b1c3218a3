package payments

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Group commit. On PostgreSQL most of what a create costs the database is
// per statement, not per row: the round trip, starting the statement's
// plan, the commit. So creates are not sent one by one. A request that
// finds no statement running sends its own at once; the others queue, and
// when the statement ends, everything queued meanwhile goes as the next
// one, up to maxBatch requests. With little traffic every statement
// carries one request and waits for nothing; under load a statement
// carries many, and the database does less work per request, which leaves
// more of the machine for everything else.
//
// One statement at a time makes the biggest batches, but a statement can
// stall: a request that races a request on another instance waits inside
// it for that one's transaction to end. So a request that finds the newest
// statement running for longer than defaultStallAfter starts another
// alongside, up to maxInFlight. Not on SQLite: it has one writer, and the
// pool one connection, so a second statement would only queue for it with
// part of the requests waiting, which makes more and smaller commits;
// there statements run one at a time.
//
// Nothing about idempotency changes: each request is still its own row,
// claimed under the unique index, and answered only after the statement
// has committed. Two requests with a batch key in common (the same client
// and key, the same payment) never share a statement: the second waits for
// the next. The
// rows of a statement are sorted the same way in every statement, so that
// two statements lock the rows they share in the same order and do not
// deadlock on them. If a statement fails, each of its requests is run again
// alone, so that one request's failure is never another's. That is safe
// whatever the failed statement did: a request whose row it had committed
// finds its own key claimed, and is answered as it was applied (decide:
// verdictOwn), not as a replay; a replay, rejection or refusal it had
// recorded is found by its request's id (sendAgain marks the request, which
// then looks for its attempt) and not recorded twice. If it failed because
// the database is unavailable, its requests are answered so at once
// instead.
//
// Each request has one statementTimeout in all, from the moment it queues:
// a statement's deadline is its oldest request's, and a request that has
// waited that long without being sent is answered SERVICE_UNAVAILABLE. So
// while the database does not answer, a request is refused within about
// 5 s, however many stalled statements it queued behind; the client
// retries with its key.

const (
	// maxInFlight caps the statements running at once.
	maxInFlight = 4
	// defaultStallAfter is how long the newest statement may run before a
	// request starts another beside it. A batched statement takes a
	// millisecond or two; one that takes longer is waiting on a lock.
	defaultStallAfter = 5 * time.Millisecond
	// maxBatch caps the requests of one statement.
	maxBatch = 64
)

// batchJob is one request waiting for a batched statement.
type batchJob interface {
	// batchKeys are what two jobs of one statement must not share.
	batchKeys() []string
	// fail answers the job with err.
	fail(err error)
	// sendAgain tells the job that it is sent again after a statement that
	// may have committed it without answering.
	sendAgain()
}

// batcher gathers jobs into statements.
type batcher[J batchJob] struct {
	// exec runs one statement for jobs and answers each of them; if it
	// returns an error it has answered none.
	exec func(ctx context.Context, jobs []J) error
	// order is the order of a statement's rows.
	order func(a, b J) int
	// stallAfter: see defaultStallAfter.
	stallAfter time.Duration
	// most caps the statements in flight; 0 means maxInFlight. SQLite's
	// batchers set 1 (see above).
	most int
	// final, if set, says an error means the database is unavailable. Then
	// the statement's jobs are not run again alone: each would only wait
	// for the database once more.
	final func(error) bool

	mu        sync.Mutex
	queue     []queued[J]
	inFlight  int
	lastStart time.Time // when the newest statement in flight started
}

// queued is a job and when it was queued, which its deadline counts from.
type queued[J batchJob] struct {
	job   J
	since time.Time
}

// deadline is when the job's time with the database is up.
func (q queued[J]) deadline() time.Time { return q.since.Add(statementTimeout) }

// expired reports whether the job's time is up at now.
func (q queued[J]) expired(now time.Time) bool { return !now.Before(q.deadline()) }

// submit queues job for the next statement, and runs that statement in the
// caller's goroutine if it is the caller's turn. The job is answered
// through its own channel.
func (b *batcher[J]) submit(job J) {
	b.mu.Lock()
	b.queue = append(b.queue, queued[J]{job: job, since: time.Now()})
	lead := b.inFlight == 0 || b.inFlight < b.limit() && time.Since(b.lastStart) > b.stallAfter
	if lead {
		b.inFlight++
	}
	b.mu.Unlock()
	if lead {
		b.lead()
	}
}

// limit is the most statements in flight.
func (b *batcher[J]) limit() int {
	if b.most > 0 {
		return b.most
	}
	return maxInFlight
}

// lead runs one statement with what is queued, then hands its slot to a
// new goroutine if more is queued, so the request that led is answered
// without waiting for later batches.
func (b *batcher[J]) lead() {
	batch, expired := b.take()
	for _, j := range expired {
		j.fail(notSentInTime())
	}
	if len(batch) > 0 {
		b.run(batch)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) > 0 {
		go b.lead()
		return
	}
	b.inFlight--
}

// notSentInTime answers a job whose time with the database ran out before
// a statement took it: SERVICE_UNAVAILABLE, as a deadline is.
func notSentInTime() error {
	return fmt.Errorf("not sent: waited %s for a statement: %w", statementTimeout, context.DeadlineExceeded)
}

// take removes up to maxBatch queued jobs, oldest first, no two sharing a
// batch key, and sorts them; and removes the jobs whose deadline has
// passed, which it returns apart, unsent. A job whose key is already taken
// stays queued for the next statement.
func (b *batcher[J]) take() (batch []queued[J], expired []J) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	batch = make([]queued[J], 0, min(len(b.queue), maxBatch))
	seen := make(map[string]struct{}, cap(batch))
	rest := b.queue[:0]
	for _, q := range b.queue {
		if q.expired(now) {
			expired = append(expired, q.job)
			continue
		}
		keys := q.job.batchKeys()
		taken := slices.ContainsFunc(keys, func(k string) bool { _, dup := seen[k]; return dup })
		if taken || len(batch) == maxBatch {
			rest = append(rest, q)
			continue
		}
		for _, k := range keys {
			seen[k] = struct{}{}
		}
		batch = append(batch, q)
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	if len(batch) > 0 {
		b.lastStart = now // a statement starts only if it has jobs
	}
	slices.SortFunc(batch, func(x, y queued[J]) int { return b.order(x.job, y.job) })
	return batch, expired
}

// run executes one statement for batch and sees that every job in it is
// answered. The statement's deadline is its oldest job's.
func (b *batcher[J]) run(batch []queued[J]) {
	deadline := batch[0].deadline()
	jobs := make([]J, len(batch))
	for i, q := range batch {
		jobs[i] = q.job
		if q.deadline().Before(deadline) {
			deadline = q.deadline()
		}
	}
	err := b.safeExec(deadline, jobs)
	switch {
	case err == nil:
		return
	case len(batch) > 1 && errors.Is(err, context.DeadlineExceeded) && !time.Now().Before(deadline):
		// The statement ran out of its oldest job's time, which says
		// nothing of the others': the jobs whose time is up are answered,
		// the others queue again, first, with the time they have left.
		now := time.Now()
		var again []queued[J]
		for _, q := range batch {
			if q.expired(now) {
				q.job.fail(err)
			} else {
				q.job.sendAgain()
				again = append(again, q)
			}
		}
		b.mu.Lock()
		b.queue = append(again, b.queue...)
		b.mu.Unlock()
		return
	case len(batch) == 1 || b.isFinal(err):
		for _, j := range jobs {
			j.fail(err)
		}
		return
	}
	// The statement failed as a whole (a deadlock with another batch, say):
	// run each job alone, within its own deadline, so that each gets its
	// own answer. A job whose time ran out meanwhile is answered so,
	// unsent; once the database is found unavailable (not merely a job's
	// time up), the rest are answered so without being sent.
	for i, q := range batch {
		if q.expired(time.Now()) {
			q.job.fail(notSentInTime())
			continue
		}
		q.job.sendAgain()
		err := b.safeExec(q.deadline(), jobs[i:i+1])
		if err == nil {
			continue
		}
		q.job.fail(err)
		if b.isFinal(err) && !errors.Is(err, context.DeadlineExceeded) {
			for _, rest := range jobs[i+1:] {
				rest.fail(fmt.Errorf("not sent, the statement before it failed: %w", err))
			}
			return
		}
	}
}

// isFinal reports whether err says the database is unavailable.
func (b *batcher[J]) isFinal(err error) bool {
	return b.final != nil && b.final(err)
}

// statementTimeout bounds a request's time with the database, from the
// moment it queues for a statement. A statement takes a millisecond or two;
// one on a connection to a database that went silent would otherwise hold
// its requests for their whole requestTimeout, and the requests queued
// behind it for longer still.
const statementTimeout = 5 * time.Second

// withStatementTimeout runs do, a transaction outside the batched
// statements (storing a change asked at a processor, recording what any
// processor call came to), within statementTimeout, so that a database gone silent answers it
// SERVICE_UNAVAILABLE as soon as a batched request would be, not at the end
// of the request's whole budget.
func withStatementTimeout(ctx context.Context, do func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, statementTimeout)
	defer cancel()
	return do(ctx)
}

// safeExec is exec until deadline, with a panic turned into an error: a
// waiting request must always get an answer. A statement cut by its
// deadline fails with context.DeadlineExceeded, whatever the driver made
// of it (SQLite reports an interrupted statement, not a timeout).
func (b *batcher[J]) safeExec(deadline time.Time, jobs []J) (err error) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	defer func() {
		if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("batched statement panicked: %v", r)
		}
	}()
	return b.exec(ctx, jobs)
}

package payments

import (
	"context"
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
// alongside, up to maxInFlight.
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
// finds its key claimed, and is answered with that payment. If it failed
// because the database is unavailable, its requests, and those queued
// behind it, are answered so at once instead (see lead).

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
	// final, if set, says an error means the database is unavailable. Then
	// the statement's jobs are not run again alone, and the jobs queued
	// behind it are not sent (see lead): each would only wait for the
	// database once more.
	final func(error) bool

	mu        sync.Mutex
	queue     []J
	inFlight  int
	lastStart time.Time // when the newest statement in flight started
}

// submit queues job for the next statement, and runs that statement in the
// caller's goroutine if it is the caller's turn. The job is answered
// through its own channel.
func (b *batcher[J]) submit(job J) {
	b.mu.Lock()
	b.queue = append(b.queue, job)
	lead := b.inFlight == 0 || b.inFlight < maxInFlight && time.Since(b.lastStart) > b.stallAfter
	if lead {
		b.inFlight++
	}
	b.mu.Unlock()
	if lead {
		b.lead()
	}
}

// lead runs one statement with what is queued, then hands its slot to a
// new goroutine if more is queued, so the request that led is answered
// without waiting for later batches.
//
// If the statement found the database unavailable, what queued behind it
// is answered with that error instead of being sent: each of those
// requests has already waited for one statement's deadline, and the next
// statement would most likely wait for another before failing the same
// way. A request is so refused within one statementTimeout (and the time
// to take a connection), not two. The client retries with its key.
func (b *batcher[J]) lead() {
	unavailable := b.run(b.take())
	b.mu.Lock()
	var behind []J
	if unavailable != nil {
		behind = b.queue
		b.queue = nil
	}
	if len(b.queue) > 0 {
		go b.lead()
	} else {
		b.inFlight--
	}
	b.mu.Unlock()
	refuse(behind, unavailable)
}

// take removes up to maxBatch queued jobs, oldest first, no two sharing a
// batch key, and sorts them. A job whose key is already taken stays queued
// for the next statement.
func (b *batcher[J]) take() []J {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastStart = time.Now()
	batch := make([]J, 0, min(len(b.queue), maxBatch))
	seen := make(map[string]struct{}, cap(batch))
	rest := b.queue[:0]
	for _, j := range b.queue {
		keys := j.batchKeys()
		taken := slices.ContainsFunc(keys, func(k string) bool { _, dup := seen[k]; return dup })
		if taken || len(batch) == maxBatch {
			rest = append(rest, j)
			continue
		}
		for _, k := range keys {
			seen[k] = struct{}{}
		}
		batch = append(batch, j)
	}
	clear(b.queue[len(rest):])
	b.queue = rest
	slices.SortFunc(batch, b.order)
	return batch
}

// run executes one statement for batch and sees that every job in it is
// answered. It returns the statement's error if final says the database is
// unavailable, and nil otherwise.
func (b *batcher[J]) run(batch []J) (unavailable error) {
	err := b.safeExec(batch)
	if err == nil {
		return nil
	}
	if b.isFinal(err) {
		unavailable = err
	}
	if len(batch) == 1 || unavailable != nil {
		for _, j := range batch {
			j.fail(err)
		}
		return unavailable
	}
	// The statement failed as a whole (a deadlock with another batch, say):
	// run each job alone, so that each gets its own answer.
	for i, j := range batch {
		err := b.safeExec([]J{j})
		if err == nil {
			continue
		}
		j.fail(err)
		if b.isFinal(err) {
			refuse(batch[i+1:], err)
			return err
		}
	}
	return nil
}

// isFinal reports whether err says the database is unavailable.
func (b *batcher[J]) isFinal(err error) bool {
	return b.final != nil && b.final(err)
}

// refuse answers jobs that are not sent because a statement before them
// found the database unavailable; err is that statement's error.
func refuse[J batchJob](jobs []J, err error) {
	for _, j := range jobs {
		j.fail(fmt.Errorf("not sent, the statement before it failed: %w", err))
	}
}

// statementTimeout bounds one batched statement. A statement takes a
// millisecond or two; one on a connection to a database that went silent
// would otherwise hold its requests for their whole requestTimeout, and
// their re-runs after it.
const statementTimeout = 5 * time.Second

// safeExec is exec, with a panic turned into an error: a waiting request
// must always get an answer.
func (b *batcher[J]) safeExec(jobs []J) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), statementTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("batched statement panicked: %v", r)
		}
	}()
	return b.exec(ctx, jobs)
}

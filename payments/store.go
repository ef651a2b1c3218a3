package payments

import (
	"cmp"
	"context"
	"time"

	"gorm.io/gorm"
)

// store is the seam between the engine and a database: everything that
// differs between PostgreSQL (store_postgres.go) and SQLite
// (store_sqlite.go). What both dialects run alike lives in steps.go and
// list.go. The package's tests run against both implementations
// (internal/dbtest's ForEach).
type store interface {
	// createBatch runs the creates of one batch and answers every job;
	// if it returns an error it has answered none (the batcher then runs
	// each job alone).
	createBatch(ctx context.Context, jobs []*job) error
	// changeBatch does the same for captures, cancels and refunds.
	changeBatch(ctx context.Context, jobs []*job) error
	// attemptCounts counts, on db (the primary or a replica), the attempts
	// made since from, by hour and outcome (stats.go).
	attemptCounts(db *gorm.DB, from time.Time) ([]hourCount, error)
	// sweepKeys deletes up to limit keys created before before, and says
	// how many it deleted (sweep.go).
	sweepKeys(ctx context.Context, before time.Time, limit int) (int64, error)
}

// job is one request waiting for its batch statement.
type job struct {
	cmd    *command
	answer chan answer // buffered: the statement never waits for the request
}

// batchKeys are what two jobs of one statement must not share. A create
// is its own row under the unique index; a change updates its payment's
// row, which one statement may update only once. A change's client is not
// known before its payment is read, so its key counts for every client.
func (j *job) batchKeys() []string {
	if j.cmd.op == OpCreate {
		return []string{"key\x00" + j.cmd.clientID + "\x00" + j.cmd.key}
	}
	return []string{"payment\x00" + j.cmd.paymentID, "changekey\x00" + j.cmd.key}
}

func (j *job) fail(err error) { j.answer <- answer{err: err} }

// byPayment orders a statement's rows the same way in every statement (by
// client and key for creates, by payment for changes), so that two
// statements lock the rows they share in the same order and do not
// deadlock on them.
func byPayment(a, b *job) int {
	return cmp.Or(cmp.Compare(a.cmd.paymentID, b.cmd.paymentID), cmp.Compare(a.cmd.clientID, b.cmd.clientID), cmp.Compare(a.cmd.key, b.cmd.key))
}

// answerKind is what a store says about one request.
type answerKind int

const (
	// answerSettled: the request is settled; outcome says how.
	answerSettled answerKind = iota + 1
	// answerHeld: the key is held and the engine must judge it (decide.go);
	// held is the key (naming its payment, which the engine reads).
	answerHeld
	// answerNotApplied: the key is new but the change did not apply;
	// payment is the payment as the statement saw it, for the engine to say
	// which rule refused, or to look again.
	answerNotApplied
	// answerRetry: the statement could not settle the request (it lost a
	// race to a request committed while it ran, or PostgreSQL rolled it
	// back to break a deadlock); send it again.
	answerRetry
	// answerNotFound: no payment has the id the request names.
	answerNotFound
	// answerForbidden: the payment belongs to a client the request may not
	// touch.
	answerForbidden
)

// answer is a store's answer about one request.
type answer struct {
	kind    answerKind
	outcome Outcome
	// payment is the payment as it is after the request: created, changed,
	// replayed or refused; none for a held key.
	payment Payment
	// refund is an applied or replayed refund's refund.
	refund *Refund
	// held is the key a rejected request found, or the held key the engine
	// must judge. A replay's may be nil (PostgreSQL's statements do not
	// send it): nothing reads it.
	held *heldKey
	// refused is a refused request's refusal.
	refused error
	// err is the error the job failed with (a database error, or input
	// the store found invalid once it read the payment).
	err error
}

// hourCount is a number of attempts of one outcome in one hour.
type hourCount struct {
	Hour    int64 // hours since the Unix epoch
	Outcome string
	N       int
}

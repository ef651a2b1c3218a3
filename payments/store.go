package payments

import (
	"cmp"
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/cmpay/cmpay/models"
)

// store is the seam between the engine and a database: everything that
// differs between PostgreSQL (store_postgres.go) and SQLite
// (store_sqlite.go). What both run alike is in steps.go and list.go. One
// test suite runs against both implementations (store_test.go).
type store interface {
	// createBatch runs the creates of one batch and answers every job;
	// if it returns an error it has answered none (the batcher then runs
	// each job alone). A job is answered settled (created, or replayed or
	// rejected: the two verdicts a store may reach itself, as decide
	// would), held (for the engine to judge with decide), or retry.
	createBatch(ctx context.Context, jobs []*job) error
	// changeBatch does the same for captures, cancels and refunds, which
	// may also be answered not applied, not found or forbidden.
	changeBatch(ctx context.Context, jobs []*job) error
	// recordBatch records the verdicts and refusals the engine reached
	// after a batch statement (a rejection, a replay the statement left to
	// it, a refusal), in one statement for the batch, as createBatch does,
	// and answers every job as recordAttempt does; if it returns an error
	// it has answered none.
	recordBatch(ctx context.Context, jobs []*recordJob) error
	// readPayment reads one payment, on the primary; ok is false when
	// there is none.
	readPayment(ctx context.Context, id string) (p Payment, ok bool, err error)
	// forgetKey deletes key id if it is still older than expiredBefore.
	forgetKey(ctx context.Context, id int64, expiredBefore time.Time) error
	// runnerOn is a Runner over db's pool: a replica's, for the reads
	// Config.Reads sends there, or the primary's.
	runnerOn(db *gorm.DB) (sqlq.Runner, error)
	// listPayments runs a page query (list.go: pageQuery) on r.
	listPayments(ctx context.Context, r sqlq.Runner, q pageQuery) ([]Payment, error)
	// attemptsOf reads the attempts of the payments with the given ids,
	// each payment's oldest first; refundsOf their refunds.
	attemptsOf(ctx context.Context, ids []string) ([]models.IdempotencyAttempt, error)
	refundsOf(ctx context.Context, ids []string) ([]models.Refund, error)
	// processorCallsOf reads the processor calls of the payments with the
	// given ids, each payment's oldest first.
	processorCallsOf(ctx context.Context, ids []string) ([]models.ProcessorCall, error)
	// asyncStatesOf reads the next actions and times of the payments with
	// the given ids, in no order.
	asyncStatesOf(ctx context.Context, ids []string) ([]asyncRow, error)
	// attemptCounts counts, on r (the primary or a replica), the attempts
	// made since from, by hour and outcome (stats.go).
	attemptCounts(ctx context.Context, r sqlq.Runner, from time.Time) ([]hourCount, error)
	// lockPaymentSQL reads a payment and locks it for the transaction
	// (changes.go).
	lockPaymentSQL() string
	// db runs what both dialects run alike, in a transaction or not: the
	// settling of processor operations (operations.go).
	db() sqlq.DB
	// claimDue leases up to limit unsettled operations due at now, at
	// the processors named, to owner until until, and returns their ids
	// (recovery.go).
	claimDue(ctx context.Context, owner string, until, now time.Time, limit int, processors [2]string) ([]string, error)
	// claimAuthorizations stamps with lease up to limit AUTHORIZED payments
	// at processor whose read is due (their last read, or their creation,
	// no later than due), and returns their ids (authcheck.go).
	claimAuthorizations(ctx context.Context, lease, due time.Time, processor string, limit int) ([]string, error)
	// claimLateChecks stamps with lease up to limit settled creates and
	// refunds at processor, sent again under a new key, whose late check is
	// due: those not read yet whose key and last send are due or older,
	// and those read once, at redue or earlier; and whose claim, if any,
	// ran out by now, the oldest key first; it returns their ids
	// (latecheck.go).
	claimLateChecks(ctx context.Context, lease, due, redue time.Time, processor string, now time.Time, limit int) ([]string, error)
	// sweepKeys deletes up to limit keys created before before, and says
	// how many it deleted (sweep.go).
	sweepKeys(ctx context.Context, before time.Time, limit int) (int64, error)
}

// settler is what settling a held key needs of the database (settleHeld
// in engine.go): the engine's (*Service, after a batch statement, on the
// primary, recording in batches), or SQLite's (inside a batch's own
// transaction).
type settler interface {
	// readPayment reads one payment; ok is false when there is none.
	readPayment(ctx context.Context, id string) (p Payment, ok bool, err error)
	// readRefund reads refund id of payment p; it fails when there is none.
	readRefund(ctx context.Context, id string, p Payment) (*Refund, error)
	// forgetKey deletes key id if it is still older than expiredBefore.
	forgetKey(ctx context.Context, id int64, expiredBefore time.Time) error
	// recordAttempt records a replay, rejection or refusal, counts it on
	// its payment, and answers with the payment as it is now (and, for a
	// replayed refund, its refund). It fails when the payment is missing.
	// It may answer retry: the database rolled it back to end a deadlock.
	recordAttempt(ctx context.Context, rec record) (answer, error)
}

// newStore is the store for db's dialect.
func newStore(db *gorm.DB, keyTTL time.Duration, now func() time.Time) (store, error) {
	return sqlq.Pick(db,
		func(pg *sqlq.PG) store { return &postgresStore{pg: pg, keyTTL: keyTTL, now: now} },
		func(lite *sqlq.Lite) store { return &sqliteStore{lite: lite, keyTTL: keyTTL, now: now} })
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

func (j *job) sendAgain() { j.cmd.sentBefore = true }

// recordJob is one attempt waiting for its record statement.
type recordJob struct {
	rec    record
	answer chan answer // buffered
}

// batchKeys keep two records of one payment apart: one statement counts
// on a payment's row once.
func (j *recordJob) batchKeys() []string { return []string{j.rec.paymentID} }

func (j *recordJob) fail(err error) { j.answer <- answer{err: err} }

func (j *recordJob) sendAgain() { j.rec.cmd.sentBefore = true }

// byRecordPayment orders a record statement's rows by payment, as
// byPayment does a change statement's.
func byRecordPayment(a, b *recordJob) int { return cmp.Compare(a.rec.paymentID, b.rec.paymentID) }

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
	// answerNotForeseen: the payment was made at a processor whose answer
	// the batch statements cannot foresee; nothing was written, and the
	// engine sends the request the phased way (changeAtProcessor).
	answerNotForeseen
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

// scanHourCount reads a row of attempt_counts: hour, outcome, n.
func scanHourCount(row sqlq.Row) (hourCount, error) {
	var c hourCount
	err := row.Scan(&c.Hour, &c.Outcome, &c.N)
	return c, err
}

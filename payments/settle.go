package payments

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/cmpay/cmpay/internal/nullable"
	"github.com/cmpay/cmpay/internal/sqlq"
	"github.com/oklog/ulid/v2"
)

// Phase 3 of a create in batches. On PostgreSQL the answers of creates
// asked at the processor are recorded by one statement for many requests
// (sql/settle_batch.sql), gathered as the creates are (batch.go), instead
// of a transaction each: the settling transaction was a third of what a
// create through Stripe cost the server
// (docs/benchmarks/2026-12-06-stripe-path-cpu.md). The rule is record's:
// the call always, then the operation only while unsettled, and with it
// the payment and its event. What the statement does not cover goes
// through record as before: an answer that settles nothing (postponed for
// recovery), a Pix or boleto paid before its answer was known
// (paidBeforeKnown), recovery's own calls, and SQLite, whose store has no
// such statement (its one writer takes transactions one at a time).

// settleJob is one create's processor answer waiting for its statement.
type settleJob struct {
	op   operationRow
	out  outcome
	took time.Duration
	// callID names the call's row, so that the statement run again finds
	// the one it wrote.
	callID string
	answer chan settleAnswer // buffered
}

// settleAnswer is what the statement did with a settleJob: settled its
// operation (payment is then the payment as it left it), or found it
// settled already; or err.
type settleAnswer struct {
	settled bool
	payment Payment
	err     error
}

// batchKeys keep two answers of one operation apart: one statement
// updates an operation's row once.
func (j *settleJob) batchKeys() []string { return []string{j.op.id} }

func (j *settleJob) fail(err error) { j.answer <- settleAnswer{err: err} }

// sendAgain does nothing: a settle job's call id keeps its call from being
// written twice (settle_batch.sql).
func (j *settleJob) sendAgain() {}

// byOperation orders a settle statement's jobs by operation, for a stable
// order of its rows. Two settle statements never share an operation (each
// create's answer is settled by its own request), and the batcher keeps
// two answers of one operation apart (batchKeys).
func byOperation(a, b *settleJob) int { return cmp.Compare(a.op.id, b.op.id) }

// createSettler is a store that settles creates in batches (PostgreSQL).
type createSettler interface {
	// settleCreates runs settle_create_batch for jobs and answers every
	// one; if it returns an error it has answered none.
	settleCreates(ctx context.Context, jobs []*settleJob) error
}

// batchSettles says whether out, a create's answer, can be recorded by
// the settle statement: it settles the operation, and is no Pix or boleto
// that applyCreate would record as paid before its answer was known.
func (s *Service) batchSettles(method Method, out outcome) bool {
	if s.settles == nil || !out.settled {
		return false
	}
	return !s.settledPastPending(method, out.status)
}

// settleCreate records a create's call and settles it through the settle
// statement, as record does in a transaction of its own.
func (s *Service) settleCreate(ctx context.Context, op operationRow, out outcome, took time.Duration) (Payment, error) {
	s.called(op, callWrite, out, took)
	j := &settleJob{op: op, out: out, took: took, callID: "call_" + ulid.Make().String(), answer: make(chan settleAnswer, 1)}
	s.settles.submit(j)
	var a settleAnswer
	select {
	case a = <-j.answer:
	case <-ctx.Done():
		// The statement may still commit; a retry of the create finds
		// what it did, as after any lost answer (await, engine.go).
		return Payment{}, fmt.Errorf("settle operation %s: waiting for the statement: %w", op.id, ctx.Err())
	}
	if a.err != nil {
		return Payment{}, fmt.Errorf("settle operation %s: %w", op.id, a.err)
	}
	if !a.settled { // settled already, by someone else's word
		var p Payment
		if err := s.readInto(ctx, s.store.db(), op.paymentID, &p); err != nil {
			return Payment{}, err
		}
		return p, nil
	}
	wasUnknown := op.state == opUnknown || op.state == opPending
	if wasUnknown {
		s.settledByRecovery(op, out.opState, out.status)
	}
	s.onSettled(op.operation, wasUnknown)
	return a.payment, nil
}

// settleArgs are the settle statement's arrays for jobs ($1 to $17).
func settleArgs(jobs []*settleJob) []any {
	n := len(jobs)
	opIDs, paymentIDs, calls, opStates, statuses, events := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n)
	codes, refs, declines := make([]*string, n), make([]*string, n), make([]*string, n)
	naTypes, pix, boleto, urls := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	expires, took, callIDs := make([]*time.Time, n), make([]int64, n), make([]string, n)
	found := make([]*string, n)
	for i, j := range jobs {
		o := j.out
		found[i] = nullable.String(o.found)
		opIDs[i], paymentIDs[i], calls[i], codes[i], took[i] = j.op.id, j.op.paymentID, string(o.call), nullable.String(o.code), j.took.Milliseconds()
		callIDs[i] = j.callID
		opStates[i], statuses[i], refs[i] = o.opState, string(o.status), nullable.String(o.reference)
		if o.status == StatusDeclined {
			declines[i] = nullable.String(o.code)
		}
		typ, _ := createdEvent(o.status)
		events[i] = string(typ)
		if a := o.nextAction; a != nil && o.status == StatusPending {
			naTypes[i], pix[i], boleto[i], urls[i] = nullable.String(string(a.Type)), nullable.String(a.PixCode), nullable.String(a.BoletoLine), nullable.String(a.HostedURL)
			at := a.ExpiresAt.UTC()
			expires[i] = &at
		}
	}
	return []any{opIDs, paymentIDs, calls, codes, took, opStates, statuses, refs, declines, events,
		naTypes, pix, boleto, urls, expires, callIDs, found}
}

// settleCreates runs sql/settle_batch.sql for jobs and answers each once
// it has committed. Should the statement commit and its answer then be
// lost (the connection cut at that moment), the batcher runs the jobs
// again: the operations and payments are not changed twice (settled_at),
// nor the calls written twice (their ids, unique).
func (st *postgresStore) settleCreates(ctx context.Context, jobs []*settleJob) error {
	answers := make([]*settleAnswer, len(jobs))
	var r resultRow
	targets := append([]any{&r.n, &r.outcome}, r.paymentTargets(false)...)
	args := append(settleArgs(jobs), st.now())
	err := st.pg.Query(ctx, postgresSQL.SQL("settle_create_batch"), args, func(row sqlq.Row) error {
		if err := row.Scan(targets...); err != nil {
			return err
		}
		i := int(r.n) - 1
		if i < 0 || i >= len(jobs) || answers[i] != nil {
			return fmt.Errorf("unexpected row for settle %d of %d", r.n, len(jobs))
		}
		a := &settleAnswer{settled: r.outcome == "SETTLED"}
		if a.settled {
			a.payment = r.payment()
		}
		answers[i] = a
		return nil
	})
	if err != nil {
		return fmt.Errorf("settle statement: %w", err)
	}
	// Committed: from here every job is answered, none sent again.
	for i, j := range jobs {
		if answers[i] == nil {
			j.fail(fmt.Errorf("settle statement: no row for operation %s", j.op.id))
			continue
		}
		j.answer <- *answers[i]
	}
	return nil
}

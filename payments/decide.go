package payments

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"
)

// This file is where the outcome of every request is decided: a create, a
// capture, a cancel and a refund alike, on PostgreSQL and on SQLite.
//
// A request is checked in this order (the contract's):
//
//  1. Input: validated when the request becomes a command (request.go); an
//     amount is checked against the payment's currency as soon as the
//     payment is read.
//  2. The key: new, or held. A held key is judged by decide below: the same
//     operation and parameters again is a replay (the first result, nothing
//     done twice); anything else is a rejection (IDEMPOTENCY_KEY_REUSED,
//     naming the fields that differ); a key past its TTL is forgotten and
//     the request handled as new.
//  3. The payment's status, then 4. the amount: allowed by the rules below,
//     or refused (PAYMENT_STATE_CONFLICT, AMOUNT_EXCEEDS_AVAILABLE), the key
//     staying unused.
//
// Go decides; the database enforces and settles races. Which request of
// many with one key is applied is decided by the unique index on (client,
// key); whether a change is allowed, by a conditional update whose WHERE
// is the rules below written in SQL (apply_change in sql/common.sql, which
// both dialects run) and by a check constraint on the amounts. The rules
// here explain a refusal and are tested against that SQL for every status,
// operation and amount (TestLifecycleRules).
//
// decide is the only place a held key's verdict is made; settleHeld
// (engine.go) acts on it, for both stores. The two common verdicts are
// also written in SQL, because settling them in the claim's own statement
// saves PostgreSQL a round trip and a second statement: a key of the
// current version, not expired, whose fingerprint is the request's, is a
// replay (the batch statements' "replay"); a create's such key with
// another fingerprint, met by a create, is a rejection (create_batch's
// "reject"; Go still names the fields that differ).
// TestBatchStatementsAgreeWithDecide checks, for every operation and every
// way a key can be held, that what a statement settles is what decide
// says (TestAStatementRunAgainIsNoReplay, for a request's own key met by
// its statement run again); everything else comes back to decide.

// heldKey is a key a request found already used.
type heldKey struct {
	id        int64
	operation Operation
	// params are what the key's first request asked for. Version 1 keys
	// stored none: settleHeld rebuilds them from the payment the key
	// created (version1Params) when a rejection needs them.
	params    Params
	fp        []byte
	version   int
	createdAt time.Time
	paymentID string
	refundID  string
	// opID is the processor operation a capture's, cancel's or refund's
	// key started (a foreseen change's has only its call: no row in
	// processor_operations).
	opID string
}

// verdict is what a request with a held key gets.
type verdict int

const (
	// verdictReplay: the same request again; answer with the first result.
	verdictReplay verdict = iota + 1
	// verdictReject: the key was used for another operation, payment or
	// parameters.
	verdictReject
	// verdictForget: the key is older than the TTL; forget it and handle the
	// request as new.
	verdictForget
	// verdictOwn: the key was claimed by this very request, in a run of its
	// statement whose answer was lost after the commit (the batcher runs
	// the statement again): the request is answered as its first run
	// applied it, and nothing is counted or recorded, for it is no retry.
	verdictOwn
)

// decide judges a request whose key is held. expiredBefore is now less the
// TTL. (A rejection names the fields that differ: see rejection.)
func decide(held heldKey, cmd *command, expiredBefore time.Time) (verdict, error) {
	if claimedBy(held, cmd) {
		return verdictOwn, nil
	}
	if held.createdAt.Before(expiredBefore) {
		return verdictForget, nil
	}
	var same bool
	switch held.version {
	case fingerprintVersion:
		same = bytes.Equal(held.fp, cmd.fp)
	case 1:
		fp, ok := fingerprintV1(cmd.clientID, cmd.op, cmd.amount, cmd.method, cmd.capture)
		same = ok && bytes.Equal(held.fp, fp)
	default:
		// A key written by a newer release (during a rolling upgrade):
		// neither a replay nor a conflict can be told. The request fails and
		// its retry, on an upgraded instance, settles it.
		return 0, fmt.Errorf("idempotency key stored under unknown fingerprint version %d", held.version)
	}
	if same {
		return verdictReplay, nil
	}
	return verdictReject, nil
}

// claimedBy says whether held was claimed by cmd itself. A create's
// payment id and a change's operation id are made for the request
// (newPaymentID, newOperationID), so a key naming the request's own was
// claimed by no other request.
func claimedBy(held heldKey, cmd *command) bool {
	if held.operation != cmd.op {
		return false
	}
	if cmd.op == OpCreate {
		return held.paymentID == cmd.newID
	}
	return held.opID != "" && held.opID == cmd.opID
}

// rejection is the error a rejected request gets: the key's payment and
// first operation, and the fields that differ from what it asked for.
func rejection(held heldKey, cmd *command) *KeyReusedError {
	return &KeyReusedError{PaymentID: held.paymentID, Operation: held.operation,
		DifferingFields: differingFields(held.params, cmd.params)}
}

// rule is what an operation needs of a payment.
type rule struct {
	// from lists the statuses the operation may start from.
	from []Status
	// available is the most the operation may move, in minor units; an
	// operation without an amount has none.
	available func(p Payment) int64
}

// rules are the payment lifecycle, enforced by apply_change (sql/common.sql).
//
// A refund takes a payment that was captured and has something left:
// CAPTURED or PARTIALLY_REFUNDED. A payment refunded in full (REFUNDED)
// refuses refunds for its status (PAYMENT_STATE_CONFLICT), as one never
// captured (AUTHORIZED, CANCELED) does; so does the loser of a race of
// refunds once the winners have refunded it all, while a loser that finds
// something left but less than it asks is refused for the amount.
var rules = map[Operation]rule{
	OpCapture: {from: []Status{StatusAuthorized}, available: func(p Payment) int64 { return p.Amount.Minor }},
	OpCancel:  {from: []Status{StatusAuthorized}},
	OpRefund: {from: []Status{StatusCaptured, StatusPartiallyRefunded},
		available: func(p Payment) int64 { return p.Refundable().Minor }},
}

// changeAmountFor is the amount in minor units a capture or refund asks of
// p: the amount given, or all that is available when none was (zero for a
// cancel). It fails when the amount given is no whole number of the
// payment's minor units: an input error, which comes before the key.
func changeAmountFor(cmd *command, p Payment) (int64, error) {
	if cmd.change != nil {
		m, err := cmd.change.in(p.Amount.Currency)
		if err != nil {
			return 0, &InvalidInputError{Problems: []Problem{{Field: "amount", Message: err.Error()}}}
		}
		return m.Minor, nil
	}
	if r := rules[cmd.op]; r.available != nil {
		return r.available(p), nil
	}
	return 0, nil
}

// stopped says whether payment p, as read, stops a capture, cancel or
// refund before its key is even looked at: the payment belongs to a client
// the request may not touch, or the amount given is no whole number of the
// payment's minor units (an input error). Otherwise it returns the amount
// the request asks for, in minor units.
func stopped(cmd *command, p Payment) (int64, *answer) {
	if cmd.Client != "" && cmd.Client != p.ClientID {
		return 0, &answer{kind: answerForbidden}
	}
	amount, err := changeAmountFor(cmd, p)
	if err != nil {
		return 0, &answer{err: err}
	}
	return amount, nil
}

// refusal says why payment p, as read, does not allow cmd for amount minor
// units, or nil when it does.
func refusal(cmd *command, p Payment, amount int64) error {
	r := rules[cmd.op]
	if !slices.Contains(r.from, p.Status) {
		return &StateConflictError{Operation: cmd.op, Status: p.Status}
	}
	if r.available != nil {
		// "All that is left" of nothing is no amount at all: refused too.
		if available := r.available(p); amount > available || amount < 1 {
			cur := p.Amount.Currency
			return &AmountExceedsError{Operation: cmd.op,
				Requested: Money{Minor: amount, Currency: cur}, Available: Money{Minor: available, Currency: cur}}
		}
	}
	return nil
}

// refusalCode is how an attempt records the rule that refused it.
func refusalCode(err error) string {
	switch {
	case errors.Is(err, ErrStateConflict):
		return "PAYMENT_STATE_CONFLICT"
	case errors.Is(err, ErrAmountExceeds):
		return "AMOUNT_EXCEEDS_AVAILABLE"
	}
	return ""
}

package payments_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
)

// TestBatchStatementsAgreeWithDecide: decide (decide.go) is the one place
// a held key's verdict is made, yet a store may settle a request it finds
// a key held for in its own statement: PostgreSQL's batch statements
// settle a replay of a key of the current version in SQL, and create_batch
// a rejection of another create's key too; SQLite's steps call decide in
// their transaction. For every operation and every way a
// key can be held, this asks decide for its verdict on the key as stored,
// then sends the request as one statement: whatever the statement settles
// must be that verdict's outcome, anything else must come back held, and
// the engine must then reach the verdict. A replay of the same request,
// and a create's rejection, must be settled by the statement itself (the
// round trip it saves).
func TestBatchStatementsAgreeWithDecide(t *testing.T) {
	t.Parallel()
	ops := []string{"create", "capture", "cancel", "refund"}
	situations := []string{"same fingerprint", "other fingerprint", "older version", "expired", "other operation", "other payment"}
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		for _, op := range ops {
			for _, sit := range situations {
				t.Run(op+", "+sit, func(t *testing.T) {
					b := setup(t, db)
					h := &suite{bundle: b, seam: payments.SeamOf(b.svc)}
					req, client := heldKeyCase(t, h, db, op, sit, op+"/"+sit)
					// What create_batch and change_batch settle themselves.
					settles := sit == "same fingerprint" || op == "create" && sit == "other fingerprint"
					checkAgreement(t, h, req, client, settles)
				})
			}
		}
	})
}

// heldKeyCase stores a key used once, as situation sit says, and returns
// the request of operation op that meets it, and the key's client. Each
// case has keys and payments of its own (prefix).
func heldKeyCase(t *testing.T, h *suite, db dbtest.DB, op, sit, prefix string) (payments.Request, string) {
	t.Helper()
	const client = "client-1" // the version 1 fingerprint below is this client's
	key := prefix + "/key"
	// A refund takes a captured payment; the others, authorized ones.
	p := h.created(t, client, prefix+"/p", "10.50", op == "refund")
	other := h.created(t, client, prefix+"/other", "10.50", op == "refund")
	// reqOn is the request of op with the key, on payment id and for
	// amount where the operation has them.
	reqOn := func(id string, amount *string) payments.Request {
		switch op {
		case "capture":
			return captureReq(id, key, amount)
		case "cancel":
			return cancelReq(id, key)
		case "refund":
			return refundReq(id, key, amount)
		}
		r := request(client, key, "10.50", "BRL", payments.MethodPix)
		if amount != nil {
			r.Amount = *amount
		}
		return r
	}
	req := reqOn(p.ID, ptr("1"))
	if op == "create" {
		req = reqOn("", nil)
	}

	switch sit {
	case "same fingerprint", "expired":
		h.send(t, req)
		if sit == "expired" {
			h.clock.Advance(testTTL + 1)
		}
	case "other fingerprint":
		h.send(t, reqOn(p.ID, ptr("2")))
		if op == "cancel" { // a cancel has no parameter but its payment
			h.send(t, reqOn(other.ID, nil))
		}
	case "older version":
		// What version 1 stored (TestFingerprintV1IsPinned): the
		// fingerprint of this client's create of 10.50 BRL by PIX, no
		// params. A create of the same replays under version 1; nothing
		// else can.
		h.send(t, req)
		const v1 = "81d1409805f0a008ce558c3441029c7d9100fc6c0a8e1f7c05d509b2dac9824d"
		fp := make([]byte, 32)
		fmt.Sscanf(v1, "%x", &fp)
		if err := db.Gorm.Exec(`UPDATE idempotency_keys SET fingerprint = ?, fingerprint_version = 1, params = NULL
			WHERE client_id = ? AND idempotency_key = ?`, fp, client, key).Error; err != nil {
			t.Fatal(err)
		}
	case "other operation":
		if op == "create" {
			h.send(t, captureReq(p.ID, key, nil))
		} else {
			h.send(t, request(client, key, "10.50", "BRL", payments.MethodPix))
		}
	case "other payment":
		if op == "create" { // a create names no payment: its key used on one
			h.send(t, cancelReq(other.ID, key))
		} else {
			h.send(t, reqOn(other.ID, ptr("1")))
		}
	}
	return req, client
}

// outcomes are the outcomes a verdict may end in: a forgotten key's
// request goes on as new, and is created, applied or refused.
var outcomes = map[string][]payments.Outcome{
	"replay": {payments.OutcomeReplayed},
	"reject": {payments.OutcomeRejected},
	"forget": {payments.OutcomeCreated, payments.OutcomeApplied, payments.OutcomeRefused},
}

func checkAgreement(t *testing.T, h *suite, req payments.Request, client string, mustSettle bool) {
	t.Helper()
	verdict, err := h.seam.Verdict(t.Context(), req, client)
	if err != nil {
		t.Fatal(err)
	}
	in := func(o payments.Outcome) bool {
		for _, want := range outcomes[verdict] {
			if o == want {
				return true
			}
		}
		return false
	}
	a := h.batch(t, req)[0]
	switch {
	case a.Kind == "settled" && !in(a.Outcome):
		t.Fatalf("the statement settled %s; decide says %s", a.Outcome, verdict)
	case a.Kind == "settled":
		return
	case a.Kind != "held":
		t.Fatalf("the statement answered %s; want settled as decide says (%s), or held", a.Kind, verdict)
	case mustSettle:
		t.Fatalf("the statement left a verdict it settles (%s) to the engine (held)", verdict)
	}
	// Held: the statement wrote nothing; the engine's answer is decide's.
	if a = h.send(t, req); a.Kind != "settled" || !in(a.Outcome) {
		t.Fatalf("the engine answered %s %s; decide says %s", a.Kind, a.Outcome, verdict)
	}
}

// TestStatementRejectsAsTheEngineDoes: a create that reuses a create's key
// with other parameters, rejected by create_batch on PostgreSQL, is
// recorded as the engine records a rejection the statement leaves to it
// (settleHeld): the same answer, the same attempt but for its key and
// payment, the payment counted and stamped alike.
func TestStatementRejectsAsTheEngineDoes(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		h := newSuite(t, db)
		const client = "client-1"
		reuse := func(key string) payments.CreateRequest {
			r := request(client, key, "2.00", "BRL", payments.MethodBoleto)
			r.Origin = payments.Origin{Transport: "admin", Actor: "ana@example.com", Address: "192.0.2.7"}
			return r
		}
		for _, key := range []string{"by-statement", "by-engine"} {
			h.send(t, request(client, key, "10.50", "BRL", payments.MethodPix))
		}
		byStatement := h.batch(t, reuse("by-statement"))[0]
		byEngine, err := h.seam.SettleHeld(t.Context(), reuse("by-engine"), client)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range []payments.Answer{byStatement, byEngine} {
			if a.Kind != "settled" || a.Outcome != payments.OutcomeRejected {
				t.Fatalf("answered %s %s; want settled REJECTED", a.Kind, a.Outcome)
			}
		}
		if !slices.Equal(byStatement.Differing, byEngine.Differing) || len(byStatement.Differing) == 0 {
			t.Errorf("differing fields %v by the statement, %v by the engine", byStatement.Differing, byEngine.Differing)
		}
		// recorded is what a key's rejection left: its payment and
		// attempt, less what names the key, the payment or the time.
		recorded := func(key string) (models.Payment, models.IdempotencyAttempt, time.Time) {
			var p models.Payment
			var a models.IdempotencyAttempt
			var k models.IdempotencyKey
			for _, err := range []error{
				db.Gorm.Where("client_id = ? AND idempotency_key = ?", client, key).Take(&p).Error,
				db.Gorm.Where("payment_id = ? AND outcome = ?", p.ID, "REJECTED").Take(&a).Error,
				db.Gorm.Where("client_id = ? AND idempotency_key = ?", client, key).Take(&k).Error,
			} {
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
			}
			return p, a, k.CreatedAt
		}
		ps, as, ks := recorded("by-statement")
		pe, ae, ke := recorded("by-engine")
		if !ps.RejectedAt.Equal(as.At) || !pe.RejectedAt.Equal(ae.At) {
			t.Errorf("rejected at %v and %v; want the attempts' times, %v and %v", ps.RejectedAt, pe.RejectedAt, as.At, ae.At)
		}
		// A second rejection of each is counted, and keeps the first stamp.
		h.clock.Advance(time.Second)
		if a := h.batch(t, reuse("by-statement"))[0]; a.Outcome != payments.OutcomeRejected || a.Payment.RejectedCount != 2 {
			t.Errorf("the statement's second rejection: %s, %d counted; want REJECTED, 2", a.Outcome, a.Payment.RejectedCount)
		}
		if a, err := h.seam.SettleHeld(t.Context(), reuse("by-engine"), client); err != nil || a.Payment.RejectedCount != 2 {
			t.Errorf("the engine's second rejection: %v, %d counted; want 2", err, a.Payment.RejectedCount)
		}
		for _, key := range []string{"by-statement", "by-engine"} {
			var p models.Payment
			if err := db.Gorm.Where("client_id = ? AND idempotency_key = ?", client, key).Take(&p).Error; err != nil {
				t.Fatal(err)
			}
			first := ps.RejectedAt
			if key == "by-engine" {
				first = pe.RejectedAt
			}
			if p.RejectedAt == nil || !p.RejectedAt.Equal(*first) {
				t.Errorf("%s: rejected at %v after a second rejection; want the first stamp, %v", key, p.RejectedAt, first)
			}
		}
		if ps.RejectedCount != 1 || pe.RejectedCount != 1 || ps.ReplayCount != 0 || pe.ReplayCount != 0 {
			t.Errorf("counted %d/%d rejections and %d/%d replays; want 1 and 0 each",
				ps.RejectedCount, pe.RejectedCount, ps.ReplayCount, pe.ReplayCount)
		}
		if ps.RejectedAt == nil || pe.RejectedAt == nil || !ps.RejectedAt.After(ks) || !pe.RejectedAt.After(ke) {
			t.Errorf("rejected at %v (key at %v) and %v (key at %v); want each after its key's first use",
				ps.RejectedAt, ks, pe.RejectedAt, ke)
		}
		if !as.At.After(ks) || !ae.At.After(ke) {
			t.Errorf("attempts at %v and %v; want each after its key's first use (%v, %v)", as.At, ae.At, ks, ke)
		}
		// Each names its own request.
		if as.RequestID == nil || ae.RequestID == nil || *as.RequestID == *ae.RequestID {
			t.Errorf("request ids %v and %v; want each its request's", as.RequestID, ae.RequestID)
		}
		as.ID, as.PaymentID, as.IdempotencyKey, as.At, as.RequestID = 0, "", "", time.Time{}, nil
		ae.ID, ae.PaymentID, ae.IdempotencyKey, ae.At, ae.RequestID = 0, "", "", time.Time{}, nil
		if !reflect.DeepEqual(as, ae) {
			t.Errorf("the statement recorded\n%+v\nthe engine\n%+v", as, ae)
		}
	})
}

// TestOneStatementSettlesEachItsOwnWay: one create statement with a new
// key, a replay, a create's key reused and a capture's key reused answers
// each request as it would alone: created, replayed and rejected by the
// statement (decide's rules in SQL on PostgreSQL; SQLite's steps), the
// capture's key left to the engine on PostgreSQL; and counts each on its
// own payment.
func TestOneStatementSettlesEachItsOwnWay(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		h := newSuite(t, db)
		const client = "client-1"
		replayed := h.send(t, request(client, "k-replay", "10.50", "BRL", payments.MethodPix)).Payment
		rejected := h.send(t, request(client, "k-reuse", "10.50", "BRL", payments.MethodPix)).Payment
		captured := h.created(t, client, "k-authorize", "10.50", false)
		if a := h.send(t, captureReq(captured.ID, "k-capture", nil)); a.Outcome != payments.OutcomeApplied {
			t.Fatalf("the capture: %s %s, want APPLIED", a.Kind, a.Outcome)
		}
		answers := h.batch(t,
			request(client, "k-new", "1.00", "BRL", payments.MethodPix),
			request(client, "k-replay", "10.50", "BRL", payments.MethodPix),
			request(client, "k-reuse", "2.00", "BRL", payments.MethodPix),
			request(client, "k-capture", "3.00", "BRL", payments.MethodPix))
		for i, want := range []payments.Outcome{payments.OutcomeCreated, payments.OutcomeReplayed, payments.OutcomeRejected} {
			if a := answers[i]; a.Kind != "settled" || a.Outcome != want {
				t.Errorf("request %d: %s %s, want settled %s", i, a.Kind, a.Outcome, want)
			}
		}
		if a := answers[1]; a.Payment.ID != replayed.ID || a.Payment.ReplayCount != 1 || a.Payment.RejectedCount != 0 {
			t.Errorf("the replay answered %s with %d replays, %d rejections; want %s, 1, 0",
				a.Payment.ID, a.Payment.ReplayCount, a.Payment.RejectedCount, replayed.ID)
		}
		if a := answers[2]; a.Payment.ID != rejected.ID || a.Payment.RejectedCount != 1 || a.Payment.ReplayCount != 0 ||
			!slices.Equal(a.Differing, []string{"amount"}) {
			t.Errorf("the rejection answered %s with %d rejections, %d replays, %v differing; want %s, 1, 0, [amount]",
				a.Payment.ID, a.Payment.RejectedCount, a.Payment.ReplayCount, a.Differing, rejected.ID)
		}
		// A capture's key: held for the engine on PostgreSQL, rejected in
		// SQLite's transaction; counted on the captured payment once
		// the engine has recorded it.
		if a := answers[3]; a.Kind == "held" {
			a = h.send(t, request(client, "k-capture", "3.00", "BRL", payments.MethodPix))
			if a.Outcome != payments.OutcomeRejected || a.Payment.ID != captured.ID || a.Payment.RejectedCount != 1 {
				t.Errorf("the capture's key reused: %s on %s, %d rejections; want REJECTED on %s, 1",
					a.Outcome, a.Payment.ID, a.Payment.RejectedCount, captured.ID)
			}
		} else if a.Outcome != payments.OutcomeRejected {
			t.Errorf("the capture's key reused: %s %s; want held or settled REJECTED", a.Kind, a.Outcome)
		}
	})
}

// TestAStatementRunAgainIsNoReplay: when a statement's answer is lost
// after its commit, the batcher runs it again with the same requests,
// which find their own keys held. Each was sent once: a create is answered
// created and a change applied, with what the first run made (a refund
// the same refund), and nothing is counted, recorded or made twice.
func TestAStatementRunAgainIsNoReplay(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		for _, op := range []string{"create", "capture", "cancel", "refund"} {
			t.Run(op, func(t *testing.T) {
				h := newSuite(t, db)
				const client = "client-1"
				var req payments.Request = request(client, op+"/again", "10.50", "BRL", payments.MethodPix)
				want, history := payments.OutcomeCreated, []payments.Outcome{payments.OutcomeCreated}
				if op != "create" {
					p := h.created(t, client, op+"/payment", "10.50", op == "refund")
					req = map[string]payments.Request{"capture": captureReq(p.ID, op+"/again", nil),
						"cancel": cancelReq(p.ID, op+"/again"), "refund": refundReq(p.ID, op+"/again", ptr("1"))}[op]
					want = payments.OutcomeApplied
					history = append(h.outcomes(t, p.ID), want)
				}
				first, stmt, a, err := h.seam.RunAgain(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				if first.Kind != "settled" || first.Outcome != want {
					t.Fatalf("the first run answered %s %s; want settled %s", first.Kind, first.Outcome, want)
				}
				// PostgreSQL's statement leaves the key to decide; SQLite's
				// steps call it inside their transaction.
				if db.Dialect == "postgres" && stmt.Kind != "held" ||
					db.Dialect == "sqlite" && (stmt.Kind != "settled" || stmt.Outcome != want) {
					t.Errorf("the second run's statement answered %s %s on %s", stmt.Kind, stmt.Outcome, db.Dialect)
				}
				if a.Kind != "settled" || a.Outcome != want {
					t.Fatalf("the engine answered %s %s; want settled %s", a.Kind, a.Outcome, want)
				}
				stored := h.mustGet(t, a.Payment.ID)
				if a.Payment.ReplayCount != 0 || stored.ReplayCount != 0 {
					t.Errorf("replays counted: %d answered, %d stored; want none", a.Payment.ReplayCount, stored.ReplayCount)
				}
				if a.Payment.Status != stored.Status || !a.Payment.CreatedAt.Equal(stored.CreatedAt) {
					t.Errorf("answered %s created at %v; the payment is %s, created at %v",
						a.Payment.Status, a.Payment.CreatedAt, stored.Status, stored.CreatedAt)
				}
				if got := h.outcomes(t, a.Payment.ID); !slices.Equal(got, history) {
					t.Errorf("attempts %v; want %v", got, history)
				}
				if op == "refund" {
					refunds, err := h.svc.Refunds(t.Context(), stored)
					if err != nil {
						t.Fatal(err)
					}
					if a.Refund == nil || len(refunds) != 1 || a.Refund.ID != refunds[0].ID || stored.Refunded.Minor != 100 {
						t.Errorf("answered refund %+v; the payment has %+v, %d refunded; want the one refund of 1.00",
							a.Refund, refunds, stored.Refunded.Minor)
					}
				}
			})
		}
	})
}

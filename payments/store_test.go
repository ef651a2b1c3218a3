package payments_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// The store suite: every method of the store interface (store.go), run
// against both implementations through payments.Seam, with the races the
// database must decide. A store may leave a held key or an unapplied
// change to the engine (PostgreSQL's statements do; SQLite's steps settle
// both in their transaction), so where that may differ the suite reads a
// request's answer as the engine finishes it (Seam.Send), and holds the
// same of both.
func TestStore(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		for i, tc := range []struct {
			name string
			run  func(t *testing.T, h *suite)
			// alone: the test reads across clients (a listing, counts, a
			// sweep), so it needs a database of its own.
			alone bool
		}{
			{"createBatch", testCreateBatch, false},
			{"changeBatch", testChangeBatch, false},
			{"readPayment", testReadPayment, false},
			{"forgetKey", testForgetKey, false},
			{"recordBatch", testRecordBatch, false},
			{"listPayments", testListPayments, true},
			{"attemptsOf and refundsOf", testAttemptsAndRefundsOf, false},
			{"attemptCounts", testAttemptCounts, true},
			{"sweepKeys", testSweepKeys, true},
			{"simultaneous claims of one key", testClaimRace, false},
			{"a capture and a cancel at once", testCaptureCancelRace, false},
			{"refunds racing past what was captured", testRefundRace, false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				d := db
				if tc.alone {
					d = dbtest.Open(t, db.Dialect)
				}
				h := newSuite(t, d)
				h.ns = fmt.Sprintf("s%d-", i)
				tc.run(t, h)
			})
		}
	})
}

// suite is one database's store, on a clock the test moves. Its clients'
// ids begin with ns, so that tests sharing a database share no key.
type suite struct {
	*bundle
	seam payments.Seam
	ns   string
}

// c is client's id in the suite's namespace.
func (h *suite) c(client string) string { return h.ns + client }

func newSuite(t *testing.T, db dbtest.DB) *suite {
	b := setup(t, db)
	return &suite{bundle: b, seam: payments.SeamOf(b.svc)}
}

func (h *suite) send(t *testing.T, req payments.Request) payments.Answer {
	t.Helper()
	a, err := h.seam.Send(t.Context(), req)
	if err != nil {
		t.Fatalf("%+v: %v", req, err)
	}
	return a
}

func (h *suite) batch(t *testing.T, reqs ...payments.Request) []payments.Answer {
	t.Helper()
	answers, err := h.seam.Batch(t.Context(), reqs...)
	if err != nil {
		t.Fatal(err)
	}
	return answers
}

// created makes a payment of amount BRL with key, captured or only
// authorized.
func (h *suite) created(t *testing.T, client, key, amount string, captured bool) payments.Payment {
	t.Helper()
	a := h.send(t, h.create(client, key, amount, captured))
	wantOutcome(t, "create "+key, a, payments.OutcomeCreated)
	return a.Payment
}

// create is a create of amount BRL by client (in the namespace) with key.
func (h *suite) create(client, key, amount string, captured bool) payments.CreateRequest {
	r := request(h.c(client), key, amount, "BRL", payments.MethodPix)
	r.Capture = &captured
	return r
}

func captureReq(id, key string, amount *string) payments.CaptureRequest {
	return payments.CaptureRequest{PaymentID: id, IdempotencyKey: key, Amount: amount}
}

func cancelReq(id, key string) payments.CancelRequest {
	return payments.CancelRequest{PaymentID: id, IdempotencyKey: key}
}

func refundReq(id, key string, amount *string) payments.RefundRequest {
	return payments.RefundRequest{PaymentID: id, IdempotencyKey: key, Amount: amount}
}

// wantOutcome fails unless a settled as want.
func wantOutcome(t *testing.T, what string, a payments.Answer, want payments.Outcome) {
	t.Helper()
	if a.Kind != "settled" || a.Outcome != want {
		t.Fatalf("%s: %s %q (%v); want settled %s", what, a.Kind, a.Outcome, a.Refused, want)
	}
}

// testCreateBatch: one statement creates every new key's payment, replays
// a key sent again by itself, and leaves any other use of a held key to
// decide, which rejects it naming what differs.
func testCreateBatch(t *testing.T, h *suite) {
	first := h.created(t, "c1", "held", "10.00", true)
	news := []payments.Request{h.create("c1", "a", "1.00", true), h.create("c1", "b", "2.00", false), h.create("c2", "a", "3.00", true)}
	answers := h.batch(t, append([]payments.Request{h.create("c1", "held", "10", true)}, news...)...)

	wantOutcome(t, "the held key sent again", answers[0], payments.OutcomeReplayed)
	if p := answers[0].Payment; p.ID != first.ID || p.ReplayCount != 1 {
		t.Errorf("replay answered %s with %d replays, want %s with 1", p.ID, p.ReplayCount, first.ID)
	}
	for i, a := range answers[1:] {
		wantOutcome(t, fmt.Sprintf("new key %d", i), a, payments.OutcomeCreated)
		stored, ok, err := h.seam.ReadPayment(t.Context(), a.Payment.ID)
		if err != nil || !ok || stored != a.Payment {
			t.Errorf("new key %d: answered %+v, stored %+v (%v, %v)", i, a.Payment, stored, ok, err)
		}
	}
	if s := answers[2].Payment.Status; s != payments.StatusAuthorized {
		t.Errorf("authorize-only create: %s", s)
	}

	a := h.send(t, h.create("c1", "held", "11", true))
	wantOutcome(t, "the held key with another amount", a, payments.OutcomeRejected)
	if !slices.Equal(a.Differing, []string{"amount"}) || a.Payment.ID != first.ID || a.Payment.RejectedCount != 1 {
		t.Errorf("rejection: %v differ, counted on %s (%d); want [amount] on %s (1)", a.Differing, a.Payment.ID, a.Payment.RejectedCount, first.ID)
	}
}

// testChangeBatch: one statement applies a capture, a cancel and a refund
// of three payments and finds a fourth missing; a payment of another
// client is forbidden, a change the rules refuse refused, and a refund
// sent again replays its refund.
func testChangeBatch(t *testing.T, h *suite) {
	auth1, auth2 := h.created(t, "c1", "p1", "10.00", false), h.created(t, "c1", "p2", "10.00", false)
	paid := h.created(t, "c1", "p3", "10.00", true)
	answers := h.batch(t, captureReq(auth1.ID, "k1", ptr("4")), cancelReq(auth2.ID, "k2"), refundReq(paid.ID, "k3", ptr("2.50")),
		captureReq("pay_missing", "k4", nil))
	for i, a := range answers[:3] {
		wantOutcome(t, fmt.Sprintf("change %d", i), a, payments.OutcomeApplied)
	}
	if p := answers[0].Payment; p.Status != payments.StatusCaptured || p.Captured.Minor != 400 {
		t.Errorf("capture: %s, %d captured", p.Status, p.Captured.Minor)
	}
	if p := answers[1].Payment; p.Status != payments.StatusCanceled {
		t.Errorf("cancel: %s", p.Status)
	}
	r := answers[2].Refund
	if p := answers[2].Payment; p.Status != payments.StatusPartiallyRefunded || p.Refunded.Minor != 250 || r == nil || r.Amount.Minor != 250 {
		t.Errorf("refund: %s, %d refunded, refund %+v", p.Status, p.Refunded.Minor, r)
	}
	if answers[3].Kind != "not found" {
		t.Errorf("missing payment: %s, want not found", answers[3].Kind)
	}

	scoped := captureReq(paid.ID, "k5", nil)
	scoped.Client = h.c("c2")
	if a := h.send(t, scoped); a.Kind != "forbidden" {
		t.Errorf("another client's payment: %s, want forbidden", a.Kind)
	}
	a := h.send(t, captureReq(auth2.ID, "k6", nil))
	wantOutcome(t, "capture of a canceled payment", a, payments.OutcomeRefused)
	if !errors.Is(a.Refused, payments.ErrStateConflict) {
		t.Errorf("refused with %v, want a state conflict", a.Refused)
	}
	a = h.send(t, refundReq(paid.ID, "k3", ptr("2.50")))
	wantOutcome(t, "refund sent again", a, payments.OutcomeReplayed)
	if a.Refund == nil || *a.Refund != *r || a.Payment.Refunded.Minor != 250 {
		t.Errorf("replayed refund %+v, payment refunded %d; want %+v, 250", a.Refund, a.Payment.Refunded.Minor, r)
	}
}

func testReadPayment(t *testing.T, h *suite) {
	p := h.created(t, "c1", "k", "1.00", true)
	for _, tc := range []struct {
		id   string
		want bool
	}{{p.ID, true}, {"pay_none", false}, {"", false}, {"pay_\x00", false}, {"pay_\xff", false}} {
		got, ok, err := h.seam.ReadPayment(t.Context(), tc.id)
		if err != nil || ok != tc.want || ok && got != p {
			t.Errorf("readPayment(%q) = %+v, %v, %v; want found: %v", tc.id, got, ok, err, tc.want)
		}
	}
}

// testForgetKey: a key is forgotten only if it is still older than the
// expired-before it is given (a key another request renewed survives), and
// a create with a forgotten key creates anew.
func testForgetKey(t *testing.T, h *suite) {
	ctx := t.Context()
	first := h.created(t, "c1", "k", "1.00", true)
	key, err := h.seam.ReadKey(ctx, h.c("c1"), "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.seam.ForgetKey(ctx, key.ID, key.CreatedAt); err != nil {
		t.Fatal(err)
	}
	if a := h.send(t, h.create("c1", "k", "1.00", true)); a.Outcome != payments.OutcomeReplayed || a.Payment.ID != first.ID {
		t.Fatalf("after forgetting a key not older than expired-before: %s of %s, want a replay of %s", a.Outcome, a.Payment.ID, first.ID)
	}
	if err := h.seam.ForgetKey(ctx, key.ID, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if a := h.send(t, h.create("c1", "k", "1.00", true)); a.Outcome != payments.OutcomeCreated || a.Payment.ID == first.ID {
		t.Errorf("after forgetting the key: %s of %s, want a new payment", a.Outcome, a.Payment.ID)
	}
}

// testRecordBatch: a replay, a rejection and a refusal, one statement
// each, are each recorded on their payment and counted; a replayed refund
// brings its refund. Then one statement records on three payments, one of
// them missing, which alone fails and records nothing.
func testRecordBatch(t *testing.T, h *suite) {
	p := h.created(t, "c1", "k", "10.00", true)
	refunded := h.send(t, refundReq(p.ID, "r", ptr("1"))).Refund
	heldCreate := payments.Params{payments.FieldOperation: string(payments.OpCreate), payments.FieldAmount: "10"}
	for i, tc := range []struct {
		rec                        payments.Rec
		replays, rejects, attempts int
	}{
		{payments.Rec{Req: refundReq(p.ID, "r", ptr("1")), Outcome: payments.OutcomeReplayed, HeldRefundID: refunded.ID}, 1, 0, 3},
		{payments.Rec{Req: h.create("c1", "k", "11", true), Outcome: payments.OutcomeRejected, HeldParams: heldCreate}, 1, 1, 4},
		{payments.Rec{Req: cancelReq(p.ID, "x"), Outcome: payments.OutcomeRefused,
			Refused: &payments.StateConflictError{Operation: payments.OpCancel, Status: payments.StatusPartiallyRefunded}}, 1, 1, 5},
	} {
		tc.rec.PaymentID, tc.rec.Now = p.ID, h.clock.Now()
		a := h.record(t, tc.rec)[0]
		wantOutcome(t, "record "+string(tc.rec.Outcome), a, tc.rec.Outcome)
		if a.Payment.ReplayCount != tc.replays || a.Payment.RejectedCount != tc.rejects {
			t.Errorf("%s: %d replays, %d rejections; want %d, %d", tc.rec.Outcome, a.Payment.ReplayCount, a.Payment.RejectedCount, tc.replays, tc.rejects)
		}
		if (a.Refund != nil) != (i == 0) || i == 0 && *a.Refund != *refunded {
			t.Errorf("%s: refund %+v", tc.rec.Outcome, a.Refund)
		}
		attempts := h.attempts(t, p.ID)
		if last := attempts[len(attempts)-1]; len(attempts) != tc.attempts || last.Outcome != tc.rec.Outcome {
			t.Errorf("%s: %d attempts, the last %s; want %d, the last %s", tc.rec.Outcome, len(attempts), last.Outcome, tc.attempts, tc.rec.Outcome)
		}
	}

	other := h.created(t, "c1", "k2", "10.00", true)
	attemptsBefore := len(h.attempts(t, p.ID)) + len(h.attempts(t, other.ID))
	now := h.clock.Now()
	answers, errs, err := h.seam.RecordBatch(t.Context(),
		payments.Rec{Req: h.create("c1", "k", "10", true), Outcome: payments.OutcomeReplayed, PaymentID: p.ID, Now: now},
		payments.Rec{Req: h.create("c1", "k", "10", true), Outcome: payments.OutcomeReplayed, PaymentID: "pay_missing", Now: now},
		payments.Rec{Req: h.create("c1", "k2", "12", true), Outcome: payments.OutcomeRejected, PaymentID: other.ID, HeldParams: heldCreate, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if errs[0] != nil || answers[0].Payment.ReplayCount != 2 || errs[2] != nil || answers[2].Payment.RejectedCount != 1 {
		t.Errorf("a batch of records: %+v, %v; want the replay and the rejection counted", answers, errs)
	}
	if !errors.Is(errs[1], payments.ErrPaymentMissing) {
		t.Errorf("a record on a missing payment: %v, want ErrPaymentMissing", errs[1])
	}
	if got := len(h.attempts(t, p.ID)) + len(h.attempts(t, other.ID)); got != attemptsBefore+2 {
		t.Errorf("%d attempts after the batch, want %d: one each for the two payments there are", got, attemptsBefore+2)
	}
}

// record records recs as one statement and returns their answers,
// failing the test on any error.
func (h *suite) record(t *testing.T, recs ...payments.Rec) []payments.Answer {
	t.Helper()
	answers, errs, err := h.seam.RecordBatch(t.Context(), recs...)
	if err = errors.Join(append(errs, err)...); err != nil {
		t.Fatal(err)
	}
	return answers
}

// testListPayments: a page composed of fragments, on a Runner over the
// reads' database (as a replica's would be), newest first, filtered,
// searched and resumed after a payment.
func testListPayments(t *testing.T, h *suite) {
	var ps []payments.Payment
	for i := range 5 {
		ps = append(ps, h.created(t, fmt.Sprintf("c%d", i%2), fmt.Sprintf("k%d", i), "1.00", i != 3))
	}
	ids := func(f payments.Filter, after *payments.Payment, size int) []string {
		t.Helper()
		page, err := h.seam.List(t.Context(), f, after, size)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, p := range page {
			out = append(out, p.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		got  []string
		want []payments.Payment
	}{
		{"all", ids(payments.Filter{}, nil, 10), []payments.Payment{ps[4], ps[3], ps[2], ps[1], ps[0]}},
		{"two", ids(payments.Filter{}, nil, 2), []payments.Payment{ps[4], ps[3]}},
		{"after the second", ids(payments.Filter{}, &ps[3], 2), []payments.Payment{ps[2], ps[1]}},
		{"client c0", ids(payments.Filter{ClientID: h.c("c0")}, nil, 10), []payments.Payment{ps[4], ps[2], ps[0]}},
		{"authorized", ids(payments.Filter{Status: payments.StatusAuthorized}, nil, 10), []payments.Payment{ps[3]}},
		{"search c1 after one", ids(payments.Filter{Search: h.c("c1")}, &ps[3], 10), []payments.Payment{ps[1]}},
		{"search by id", ids(payments.Filter{Search: ps[2].ID}, nil, 10), []payments.Payment{ps[2]}},
	} {
		if want := paymentIDs(tc.want); !slices.Equal(tc.got, want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, want)
		}
	}
}

func paymentIDs(ps []payments.Payment) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

func testAttemptsAndRefundsOf(t *testing.T, h *suite) {
	p1, p2 := h.created(t, "c1", "k1", "10.00", true), h.created(t, "c1", "k2", "10.00", true)
	h.send(t, refundReq(p2.ID, "r1", ptr("1")))
	h.send(t, refundReq(p1.ID, "r2", ptr("2")))
	h.send(t, refundReq(p2.ID, "r3", ptr("3")))
	attempts, err := h.seam.AttemptsOf(t.Context(), p2.ID, p1.ID, "pay_none")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range attempts {
		got = append(got, a.PaymentID+" "+a.IdempotencyKey+" "+a.Outcome)
	}
	want := []string{p1.ID + " k1 CREATED", p1.ID + " r2 APPLIED", p2.ID + " k2 CREATED", p2.ID + " r1 APPLIED", p2.ID + " r3 APPLIED"}
	if p1.ID > p2.ID {
		want = append(want[2:], want[:2]...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("attemptsOf: %v, want %v (by payment, then oldest first)", got, want)
	}
	refunds, err := h.seam.RefundsOf(t.Context(), p2.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(refunds) != 2 || refunds[0].AmountMinor != 100 || refunds[1].AmountMinor != 300 {
		t.Errorf("refundsOf: %+v, want p2's refunds of 1.00 and 3.00, oldest first", refunds)
	}
}

func testAttemptCounts(t *testing.T, h *suite) {
	start := h.clock.Now().Truncate(time.Hour)
	h.created(t, "c1", "k1", "1.00", true)
	h.send(t, h.create("c1", "k1", "1.00", true))
	h.clock.Advance(time.Hour)
	h.created(t, "c1", "k2", "1.00", true)
	counts, err := h.seam.AttemptCounts(t.Context(), start)
	if err != nil {
		t.Fatal(err)
	}
	hour := start.Unix() / 3600
	want := []payments.HourCount{{Hour: hour, Outcome: "CREATED", N: 1}, {Hour: hour, Outcome: "REPLAYED", N: 1}, {Hour: hour + 1, Outcome: "CREATED", N: 1}}
	if len(counts) != len(want) || !slices.Contains(counts, want[0]) || !slices.Contains(counts, want[1]) || !slices.Contains(counts, want[2]) {
		t.Errorf("attemptCounts: %+v, want %+v", counts, want)
	}
}

func testSweepKeys(t *testing.T, h *suite) {
	for i := range 3 {
		h.created(t, "c1", fmt.Sprintf("old%d", i), "1.00", true)
	}
	before := h.clock.Now()
	kept := h.created(t, "c1", "new", "1.00", true)
	for _, want := range []int64{2, 1, 0} {
		n, err := h.seam.SweepKeys(t.Context(), before, 2)
		if err != nil || n != want {
			t.Fatalf("sweepKeys = %d, %v; want %d", n, err, want)
		}
	}
	if a := h.send(t, h.create("c1", "new", "1.00", true)); a.Outcome != payments.OutcomeReplayed || a.Payment.ID != kept.ID {
		t.Errorf("the newer key after the sweep: %s of %s, want a replay of %s", a.Outcome, a.Payment.ID, kept.ID)
	}
	if a := h.send(t, h.create("c1", "old0", "1.00", true)); a.Outcome != payments.OutcomeCreated {
		t.Errorf("a swept key: %s, want CREATED", a.Outcome)
	}
}

// race sends every request at once, each alone past the batcher, so that
// the database decides between them, and returns their answers in order.
func (h *suite) race(t *testing.T, reqs ...payments.Request) []payments.Answer {
	t.Helper()
	answers, errs := make([]payments.Answer, len(reqs)), make([]error, len(reqs))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, r := range reqs {
		wg.Go(func() {
			<-start
			answers[i], errs[i] = h.seam.Send(t.Context(), r)
		})
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return answers
}

// tally counts answers by outcome.
func tally(answers []payments.Answer) map[payments.Outcome]int {
	n := map[payments.Outcome]int{}
	for _, a := range answers {
		n[a.Outcome]++
	}
	return n
}

// testClaimRace: of simultaneous creates with one key, one creates the
// payment and every other replays it.
func testClaimRace(t *testing.T, h *suite) {
	reqs := make([]payments.Request, 8)
	for i := range reqs {
		reqs[i] = h.create("c1", "raced", "5.00", true)
	}
	answers := h.race(t, reqs...)
	if n := tally(answers); n[payments.OutcomeCreated] != 1 || n[payments.OutcomeReplayed] != len(reqs)-1 {
		t.Fatalf("outcomes %v, want 1 created and %d replayed", n, len(reqs)-1)
	}
	for _, a := range answers {
		if a.Payment.ID != answers[0].Payment.ID {
			t.Fatalf("answers name payments %s and %s", answers[0].Payment.ID, a.Payment.ID)
		}
	}
}

// testCaptureCancelRace: of a capture and a cancel of one authorization
// at once, one applies and the other is refused for the status it left.
func testCaptureCancelRace(t *testing.T, h *suite) {
	for i := range 4 {
		p := h.created(t, "c1", fmt.Sprintf("auth%d", i), "10.00", false)
		answers := h.race(t, captureReq(p.ID, fmt.Sprintf("cap%d", i), nil), cancelReq(p.ID, fmt.Sprintf("can%d", i)))
		if n := tally(answers); n[payments.OutcomeApplied] != 1 || n[payments.OutcomeRefused] != 1 {
			t.Fatalf("round %d: outcomes %v, want one applied and one refused", i, n)
		}
		won := answers[0].Payment.Status
		for _, a := range answers {
			if a.Outcome == payments.OutcomeApplied {
				won = a.Payment.Status
			}
			if a.Outcome == payments.OutcomeRefused && !errors.Is(a.Refused, payments.ErrStateConflict) {
				t.Errorf("round %d: refused with %v, want a state conflict", i, a.Refused)
			}
		}
		final, _, err := h.seam.ReadPayment(t.Context(), p.ID)
		if err != nil || final.Status != won {
			t.Errorf("round %d: the payment ends %s (%v), the applied request left it %s", i, final.Status, err, won)
		}
	}
}

// testRefundRace: refunds that together ask for more than was captured,
// sent at once: as many apply as fit, the rest are refused for the amount,
// and never is more refunded than was captured.
func testRefundRace(t *testing.T, h *suite) {
	p := h.created(t, "c1", "paid", "10.00", true)
	reqs := make([]payments.Request, 6)
	for i := range reqs {
		reqs[i] = refundReq(p.ID, fmt.Sprintf("r%d", i), ptr("3"))
	}
	answers := h.race(t, reqs...)
	if n := tally(answers); n[payments.OutcomeApplied] != 3 || n[payments.OutcomeRefused] != 3 {
		t.Fatalf("outcomes %v, want 3 applied and 3 refused", n)
	}
	for _, a := range answers {
		if a.Outcome == payments.OutcomeRefused && !errors.Is(a.Refused, payments.ErrAmountExceeds) {
			t.Errorf("refused with %v, want the amount exceeded", a.Refused)
		}
	}
	final, _, err := h.seam.ReadPayment(t.Context(), p.ID)
	if err != nil || final.Refunded.Minor != 900 || final.Status != payments.StatusPartiallyRefunded {
		t.Errorf("the payment ends %s with %d refunded (%v), want PARTIALLY_REFUNDED with 900", final.Status, final.Refunded.Minor, err)
	}
}

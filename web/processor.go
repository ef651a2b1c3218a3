package web

import (
	"cmp"
	"strconv"
	"strings"
	"time"

	"github.com/cmpay/cmpay/payments"
)

// processorNote is one sentence about a payment at its processor, and the
// class that colours it.
type processorNote struct{ Text, Class string }

// processorNotes says in plain words what support staff need to know of a
// payment at its processor: work sent whose answer is not known yet (which
// CMPay resolves by itself, so nobody should redo it, unless the processor
// refuses CMPay's credentials: waitsForCredentials), a decline, a failed
// refund (or one the payer's bank returned), a Pix or boleto waiting for
// the payer.
func processorNotes(p payments.Payment, refunds []payments.Refund, calls []payments.ProcessorCall) []processorNote {
	notes := statusNotes(p, refunds, calls)
	for _, n := range notes {
		if n.Class == "pending" && p.Status != payments.StatusPending && waitsForCredentials(calls) {
			return append(notes, processorNote{"The processor refused CMPay's credentials on its last call (" +
				payments.CodeCredentialsRefused + "): nothing can be resolved until CMPay's API key for it " +
				"(STRIPE_API_KEY) is fixed; CMPay then resolves it by itself.", "declined"})
		}
	}
	return notes
}

// waitsForCredentials says whether the newest of a payment's processor
// calls, oldest first as payments.ProcessorCallsOf gives them, was refused
// for CMPay's credentials: recovery asks again, but nothing settles until
// the API key is fixed.
func waitsForCredentials(calls []payments.ProcessorCall) bool {
	return len(calls) > 0 && calls[len(calls)-1].Code == payments.CodeCredentialsRefused
}

// statusNotes are processorNotes' sentences on the payment's status, its
// pending capture or cancel, and its refunds.
func statusNotes(p payments.Payment, refunds []payments.Refund, calls []payments.ProcessorCall) []processorNote {
	const unknown = "; its answer is not known yet. CMPay will resolve it by itself."
	var notes []processorNote
	switch p.Status {
	case payments.StatusProcessing:
		notes = append(notes, processorNote{"Payment sent to the processor" + unknown, "pending"})
	case payments.StatusDeclined:
		if p.DeclineCode == payments.DeclineNotCreated {
			notes = append(notes, processorNote{"The processor never made this payment: its answer was lost, and a day " +
				"later its records hold none (" + p.DeclineCode + "); no money moved. A new try needs a new idempotency key.", "declined"})
			break
		}
		notes = append(notes, processorNote{"The processor declined this payment (" + cmp.Or(p.DeclineCode, "no code given") +
			"); no money moved. A new try needs a new idempotency key.", "declined"})
	case payments.StatusPending:
		text := "Created at the processor; waiting for the payer to pay"
		if p.NextAction != nil {
			text += " until " + stamp(p.NextAction.ExpiresAt)
		}
		notes = append(notes, processorNote{text + ".", "pending"})
	case payments.StatusExpired:
		notes = append(notes, processorNote{"The payer did not pay in time; no money moved.", "declined"})
	}
	switch p.PendingOperation {
	case payments.OpCapture:
		notes = append(notes, processorNote{"Capture sent to the processor" + unknown, "pending"})
	case payments.OpCancel:
		notes = append(notes, processorNote{"Cancel sent to the processor" + unknown, "pending"})
	}
	for _, r := range refunds {
		switch r.Status {
		case payments.RefundProcessing:
			if refundAccepted(r, refunds, calls) {
				notes = append(notes, processorNote{"Refund of " + money(r.Amount) + " accepted by the processor; not settled yet. " +
					"CMPay learns the outcome by itself.", "pending"})
				continue
			}
			notes = append(notes, processorNote{"Refund of " + money(r.Amount) + " sent to the processor" + unknown, "pending"})
		case payments.RefundFailed:
			if !r.ReturnedAt.IsZero() {
				notes = append(notes, processorNote{"The refund of " + money(r.Amount) + " succeeded, then came back: the processor " +
					"failed it on " + stamp(r.ReturnedAt) + " (" + cmp.Or(r.FailureCode, "no code given") + "), the payer's bank having " +
					"returned it. The payer did not get it back; it no longer counts as refunded and can be refunded again.", "declined"})
				continue
			}
			notes = append(notes, processorNote{"The processor failed the refund of " + money(r.Amount) + " (" +
				cmp.Or(r.FailureCode, "no code given") + "); no money went back, and the amount can be refunded again.", "declined"})
		}
	}
	return notes
}

// paidLater says whether p is paid by its payer after it is created (Pix,
// boleto): its page's paid-later section lists the processor's events,
// which the processor section lists for any other payment.
func paidLater(p payments.Payment) bool {
	return p.Method == payments.MethodPix || p.Method == payments.MethodBoleto
}

// callKindText is a call's "Sent / read" cell: a read moves no money, so a
// read of a create must not pass for a second create.
func callKindText(c payments.ProcessorCall) string {
	if c.Kind == payments.CallRead {
		return "Read"
	}
	return "Sent"
}

// callKindTitle says what a call's "Sent / read" cell means.
func callKindTitle(c payments.ProcessorCall) string {
	if c.Kind == payments.CallRead {
		return "CMPay read the processor's record to learn what came of the operation; nothing was sent"
	}
	return "CMPay sent the operation with its key; a retry with the same key cannot make it twice"
}

// callResult is a call's result: a write's outcome as it is, and whether
// the processor left it pending ("SUCCEEDED: still pending", a Stripe
// refund's first answer, which is no refund made yet); a read's as the
// state of the processor's record it found ("read: still pending", "read:
// expired"), since "SUCCEEDED" there only says the read worked.
func callResult(c payments.ProcessorCall) string {
	if c.Kind != payments.CallRead {
		if pendingState(c.RecordState) {
			return string(c.Outcome) + ": still pending"
		}
		return string(c.Outcome)
	}
	switch {
	case c.Outcome == payments.CallUnknown:
		return "read: no answer"
	case c.Code == "none_found":
		return "read: not found"
	case c.Outcome == payments.CallError:
		return "read: error"
	}
	switch {
	case c.RecordState == "" && c.Outcome == payments.CallDeclined:
		return "read: refused"
	case c.RecordState == "":
		return "read: answered"
	case pendingState(c.RecordState):
		return "read: still pending"
	}
	return "read: " + strings.ReplaceAll(c.RecordState, "_", " ")
}

// pendingState says whether a processor's record in state (its own word)
// is not settled yet: a payment waiting for its payer or for the
// processor, a refund still processing.
func pendingState(state string) bool {
	switch state {
	case "pending", "processing", "requires_action":
		return true
	}
	return false
}

// callResultClass is the badge class of a call's result: a read's is
// plain, whatever it found, so it does not look like an operation done.
func callResultClass(c payments.ProcessorCall) string {
	if c.Kind == payments.CallRead {
		return "read"
	}
	return callOutcomeClass(c.Outcome)
}

// callResultTitle says what a call's result means.
func callResultTitle(c payments.ProcessorCall) string {
	if c.Kind != payments.CallRead {
		if pendingState(c.RecordState) {
			return callOutcomeText(c.Outcome) + ", which was still pending: nothing is settled yet"
		}
		return callOutcomeText(c.Outcome)
	}
	switch {
	case c.Outcome == payments.CallUnknown:
		return "the read got no answer (a timeout, a 5xx, 409 or 429): read again later"
	case c.Code == "none_found":
		return "the processor holds no record of the operation yet: read again later"
	case c.Outcome == payments.CallError:
		return "the read failed with an error: read again later"
	}
	return "the state the processor's record was in when CMPay read it"
}

// callOutcomeClass is the badge class of a processor call's outcome.
func callOutcomeClass(o payments.CallOutcome) string {
	switch o {
	case payments.CallSucceeded:
		return "created"
	case payments.CallUnknown:
		return "unknown"
	}
	return "rejected"
}

// callOutcomeText says what a processor call's outcome means.
func callOutcomeText(o payments.CallOutcome) string {
	switch o {
	case payments.CallSucceeded:
		return "the processor answered with its record"
	case payments.CallDeclined:
		return "the processor refused"
	case payments.CallUnknown:
		return "no answer that settles it (a timeout, a 5xx, 409 or 429): asked again with the same key"
	}
	return "an error that does not settle the operation"
}

// duration shows how long a call took: "42 ms", "10.0 s".
func duration(d time.Duration) string {
	if d < 10*time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}

// refundStatusClass is the badge class of a refund's status.
func refundStatusClass(st payments.RefundStatus) string {
	switch st {
	case payments.RefundProcessing:
		return "unknown"
	case payments.RefundFailed:
		return "rejected"
	}
	return "created"
}

// payLaterTitle heads a Pix or boleto's section by what came of it: an
// expired Pix read "Paid by the payer".
func payLaterTitle(p payments.Payment) string {
	switch p.Status {
	case payments.StatusPending:
		return "To be paid by the payer"
	case payments.StatusExpired:
		return "Not paid: expired"
	case payments.StatusProcessing:
		return "To be paid by the payer, once the processor has made it"
	}
	return "Paid by the payer"
}

// boletoGroups writes a boleto's 47-digit line in the groups it is printed
// in (fields of 5.5, 5.6 and 5.6 digits, the check digit, then 14 digits),
// for display only; any other text is left as it is.
func boletoGroups(line string) string {
	if len(line) != 47 || strings.Trim(line, "0123456789") != "" {
		return line
	}
	return line[0:5] + "." + line[5:10] + " " + line[10:15] + "." + line[15:21] + " " +
		line[21:26] + "." + line[26:32] + " " + line[32:33] + " " + line[33:47]
}

// refundAccepted says whether the processor answered refund r, PROCESSING,
// with its record (Stripe's "pending": accepted, not settled) rather than
// not at all. A call does not name its refund, so this is said only while
// r is the one refund PROCESSING: then the newest refund call since r was
// made is about it.
func refundAccepted(r payments.Refund, refunds []payments.Refund, calls []payments.ProcessorCall) bool {
	for _, other := range refunds {
		if other.ID != r.ID && other.Status == payments.RefundProcessing {
			return false
		}
	}
	for i := len(calls) - 1; i >= 0; i-- {
		if c := calls[i]; c.Operation == payments.OpRefund && !c.At.Before(r.CreatedAt) {
			return c.Outcome == payments.CallSucceeded
		}
	}
	return false
}

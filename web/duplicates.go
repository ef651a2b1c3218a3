package web

import (
	"fmt"
	"strings"

	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
)

// duplicateNote is what a duplicate at the processor means and what staff
// do about it, in a sentence: "Stripe holds a second charge for this
// payment, pi_…, 100.00 BRL, succeeded: refund it in Stripe's dashboard."
// refunds are the payment's: a refund's duplicate is read beside its own.
func duplicateNote(d payments.Duplicate, refunds []payments.Refund) string {
	if d.Operation == payments.OpRefund {
		return refundDuplicateNote(d, failedRefund(refunds, d.RefundID))
	}
	who := processorTitle(d.Processor)
	amount := money(d.Amount)
	switch processor.PaymentState(d.State) {
	case processor.PaymentAuthorized:
		return fmt.Sprintf("%s holds a second authorization for this payment, %s, %s, not captured: cancel it in %s's "+
			"dashboard, or it holds the payer's money until it expires.", who, d.Reference, amount, who)
	case processor.PaymentPending:
		return fmt.Sprintf("%s holds a second payment for this payment, %s, %s, found waiting for its payer: CMPay "+
			"cancels it at %s so that it cannot be paid (a failed cancel is tried again; an ERROR line says if the payer "+
			"paid first). Should %s's dashboard show it paid, refund it there.", who, d.Reference, amount, who, who)
	case processor.PaymentProcessing:
		return fmt.Sprintf("%s holds a second charge for this payment, %s, %s, processing: once it has succeeded, refund "+
			"it in %s's dashboard.", who, d.Reference, amount, who)
	}
	return fmt.Sprintf("%s holds a second charge for this payment, %s, %s, succeeded: refund it in %s's dashboard.",
		who, d.Reference, amount, who)
}

// refundDuplicateNote is duplicateNote for a refund's duplicate. When
// CMPay shows its own refund FAILED (ownFailed; as when its request under
// a new key was refused and the processor completed the one under its
// first later), the duplicate is the only refund that moved money, not a
// second one: the payer got it back once, and CMPay's refunded amount
// leaves it out.
func refundDuplicateNote(d payments.Duplicate, ownFailed bool) string {
	who, amount := processorTitle(d.Processor), money(d.Amount)
	pending := processor.RefundState(d.State) == processor.RefundPending
	if ownFailed {
		did, got, what := "refunded", "got this money back once, not twice", "was"
		if pending {
			did, got, what = "is refunding", "gets this money back once it succeeds, not twice", "is being"
		}
		return fmt.Sprintf("%s %s this payment's refund %s as %s, %s, %s, while CMPay shows that refund FAILED: the "+
			"payer %s, and CMPay's refunded amount understates what %s refunded by %s. Check %s in %s's dashboard.",
			who, did, d.RefundID, d.Reference, amount, d.State, got, what, amount, d.Reference, who)
	}
	got := "got this money back twice"
	if pending {
		got = "gets this money back twice once it succeeds"
	}
	return fmt.Sprintf("%s holds a second refund of this payment's refund %s, %s, %s, %s: the payer %s. A refund "+
		"cannot be undone; settle it with the payer.", who, d.RefundID, d.Reference, amount, d.State, got)
}

// failedRefund says whether refund id, among refunds, is FAILED.
func failedRefund(refunds []payments.Refund, id string) bool {
	for _, r := range refunds {
		if r.ID == id {
			return r.Status == payments.RefundFailed
		}
	}
	return false
}

// duplicatesHeading heads the duplicates' section: money moved twice,
// unless none moved money twice: each is the only refund made of a refund
// CMPay shows FAILED, or a second Pix or boleto that waited for its payer
// (which CMPay cancels at the processor).
func duplicatesHeading(v paymentView) string {
	failed, waiting := 0, 0
	for _, d := range v.Duplicates {
		switch {
		case d.Operation == payments.OpRefund && failedRefund(v.Refunds, d.RefundID):
			failed++
		case d.Operation == payments.OpCreate && processor.PaymentState(d.State) == processor.PaymentPending:
			waiting++
		default:
			return "Money moved twice"
		}
	}
	switch {
	case waiting == 0:
		return "Refunded at the processor, FAILED in CMPay"
	case failed == 0:
		return "A second payment found waiting for its payer"
	}
	return "Found at the processor besides CMPay's record"
}

// duplicatesFound says when and how the duplicates were found.
func duplicatesFound(ds []payments.Duplicate) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		how := "by the processor's event about it"
		switch d.FoundBy {
		case payments.FoundByRecovery:
			how = "by recovery's read of the processor"
		case payments.FoundByLateCheck:
			how = "by the late check, the processor read again a day after the operation was sent under a new key"
		}
		parts[i] = fmt.Sprintf("%s on %s UTC %s", d.Reference, precise(d.FoundAt), how)
	}
	return strings.Join(parts, "; ")
}

// processorTitle is a processor's name as a sentence starts it.
func processorTitle(name string) string {
	switch name {
	case processor.NameStripe:
		return "Stripe"
	case processor.NameSandbox:
		return "The sandbox"
	}
	return name
}

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
func duplicateNote(d payments.Duplicate) string {
	who := processorTitle(d.Processor)
	amount := money(d.Amount)
	if d.Operation == payments.OpRefund {
		got := "got this money back twice"
		if processor.RefundState(d.State) == processor.RefundPending {
			got = "gets this money back twice once it succeeds"
		}
		return fmt.Sprintf("%s holds a second refund of this payment's refund %s, %s, %s, %s: the payer %s. A refund "+
			"cannot be undone; settle it with the payer.", who, d.RefundID, d.Reference, amount, d.State, got)
	}
	switch processor.PaymentState(d.State) {
	case processor.PaymentAuthorized:
		return fmt.Sprintf("%s holds a second authorization for this payment, %s, %s, not captured: cancel it in %s's "+
			"dashboard, or it holds the payer's money until it expires.", who, d.Reference, amount, who)
	case processor.PaymentProcessing:
		return fmt.Sprintf("%s holds a second charge for this payment, %s, %s, processing: once it has succeeded, refund "+
			"it in %s's dashboard.", who, d.Reference, amount, who)
	}
	return fmt.Sprintf("%s holds a second charge for this payment, %s, %s, succeeded: refund it in %s's dashboard.",
		who, d.Reference, amount, who)
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

package stripe

import (
	"fmt"
	"strings"
	"time"

	"github.com/cmpay/cmpay/processor"
	stripeapi "github.com/stripe/stripe-go/v82"
)

// Stripe takes amounts in the currency's smallest unit, which is the ISO
// 4217 minor unit except for two currencies that ISO gives no decimals
// and Stripe, for backwards compatibility, counts in hundredths (the
// amount must then be a whole number of units); three-decimal currencies
// must end in 0. https://docs.stripe.com/currencies#special-cases
var (
	hundredths   = map[string]bool{"ISK": true, "UGX": true}
	threeDecimal = map[string]bool{"BHD": true, "JOD": true, "KWD": true, "OMR": true, "TND": true}
)

func toStripeAmount(minor int64, currency string) (int64, error) {
	cur := strings.ToUpper(currency)
	switch {
	case minor <= 0:
		return 0, fmt.Errorf("amount must be positive")
	case len(cur) != 3:
		return 0, fmt.Errorf("currency must be a three-letter code")
	case hundredths[cur]:
		if minor > 1<<62/100 {
			return 0, fmt.Errorf("amount too large")
		}
		return minor * 100, nil
	case threeDecimal[cur] && minor%10 != 0:
		return 0, fmt.Errorf("%s amounts must be multiples of 0.010 at Stripe", cur)
	}
	return minor, nil
}

func fromStripeAmount(amount int64, currency string) int64 {
	if hundredths[strings.ToUpper(currency)] {
		return amount / 100
	}
	return amount
}

// paymentFrom maps a PaymentIntent to the seam's Payment.
func paymentFrom(pi *stripeapi.PaymentIntent) processor.Payment {
	cur := strings.ToUpper(string(pi.Currency))
	p := processor.Payment{Reference: pi.ID, PaymentID: pi.Metadata["cmpay_payment_id"],
		AmountMinor: fromStripeAmount(pi.Amount, cur), Currency: cur, Created: unix(pi.Created)}
	switch pi.Status {
	case stripeapi.PaymentIntentStatusSucceeded:
		p.State, p.CapturedMinor = processor.PaymentCaptured, fromStripeAmount(pi.AmountReceived, cur)
	case stripeapi.PaymentIntentStatusRequiresCapture:
		p.State = processor.PaymentAuthorized
	case stripeapi.PaymentIntentStatusProcessing:
		p.State = processor.PaymentProcessing
	case stripeapi.PaymentIntentStatusCanceled:
		// A Pix or boleto intent is canceled when it expires unpaid.
		p.State = processor.PaymentCanceled
		if isAsync(pi) {
			p.State = processor.PaymentExpired
		}
	case stripeapi.PaymentIntentStatusRequiresAction:
		p.State, p.NextAction = processor.PaymentRequiresAction, nextAction(pi.NextAction)
		if p.NextAction != nil {
			p.State = processor.PaymentPending
		}
	case stripeapi.PaymentIntentStatusRequiresPaymentMethod:
		p.State = processor.PaymentRequiresAction
		if e := pi.LastPaymentError; e != nil {
			p.State, p.DeclineCode = processor.PaymentDeclined, declineCode(e)
			if e.Code == stripeapi.ErrorCodePaymentIntentPaymentAttemptExpired {
				p.State, p.DeclineCode = processor.PaymentExpired, ""
			}
		}
	default: // requires_confirmation: created, never confirmed; no money moved
		p.State = processor.PaymentRequiresAction
	}
	return p
}

// declineCode is Stripe's most specific code: decline_code when given,
// else code.
func declineCode(e *stripeapi.Error) string {
	if e.DeclineCode != "" {
		return string(e.DeclineCode)
	}
	return string(e.Code)
}

func nextAction(na *stripeapi.PaymentIntentNextAction) *processor.NextAction {
	switch {
	case na == nil:
		return nil
	case na.PixDisplayQRCode != nil:
		q := na.PixDisplayQRCode
		return &processor.NextAction{Type: processor.NextActionPixCode, PixCode: q.Data,
			HostedURL: q.HostedInstructionsURL, ExpiresAt: unix(q.ExpiresAt)}
	case na.BoletoDisplayDetails != nil:
		b := na.BoletoDisplayDetails
		return &processor.NextAction{Type: processor.NextActionBoleto, BoletoLine: b.Number,
			HostedURL: b.HostedVoucherURL, ExpiresAt: unix(b.ExpiresAt)}
	}
	return nil
}

// refundFrom maps a Refund to the seam's Refund.
func refundFrom(re *stripeapi.Refund) processor.Refund {
	cur := strings.ToUpper(string(re.Currency))
	r := processor.Refund{Reference: re.ID, RefundID: re.Metadata["cmpay_refund_id"],
		AmountMinor: fromStripeAmount(re.Amount, cur), Currency: cur, Created: unix(re.Created)}
	if re.PaymentIntent != nil {
		r.PaymentReference = re.PaymentIntent.ID
	}
	switch re.Status {
	case stripeapi.RefundStatusSucceeded:
		r.State = processor.RefundSucceeded
	case stripeapi.RefundStatusFailed, stripeapi.RefundStatusCanceled:
		r.State, r.FailureCode = processor.RefundFailed, string(re.FailureReason)
		if r.FailureCode == "" {
			r.FailureCode = string(re.Status)
		}
	default: // pending, requires_action: still processing, amount reserved
		r.State = processor.RefundPending
	}
	return r
}

func unix(s int64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(s, 0).UTC()
}

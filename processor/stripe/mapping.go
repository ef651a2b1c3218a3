package stripe

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cmpay/cmpay/internal/iso4217"
	"github.com/cmpay/cmpay/processor"
	stripeapi "github.com/stripe/stripe-go/v82"
)

// Stripe takes amounts in its own smallest unit of each currency, which
// is ISO 4217's minor unit for most of them but not all
// (https://docs.stripe.com/currencies#special-cases): MGA, which ISO gives
// two decimals, is one of Stripe's zero-decimal currencies; ISK and UGX,
// which ISO gives none, Stripe counts in hundredths for backwards
// compatibility (whole units only); and its three-decimal currencies must
// end in 0. Sending an ISO amount where Stripe counts differently charges
// the payer 100 times the price, so stripeDigits names Stripe's decimals
// for every currency whose decimals are not 2 at Stripe or at ISO, and a
// currency with other than 2 at ISO that it does not name is refused.
var stripeDigits = map[string]int{
	// Zero-decimal at Stripe: MGA against ISO's 2, the rest as ISO.
	"BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "JPY": 0, "KMF": 0, "KRW": 0, "MGA": 0, "PYG": 0, "RWF": 0,
	"VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
	// Hundredths of a unit Stripe will not split.
	"ISK": 2, "UGX": 2,
	// Three decimals, the last one 0.
	"BHD": 3, "JOD": 3, "KWD": 3, "OMR": 3, "TND": 3,
}

// CheckAmount says why amount minor units of currency (ISO 4217's unit)
// cannot be sent to Stripe, or nil: the engine asks before storing
// anything, so such an amount is bad input, not a decline.
func (c *Connector) CheckAmount(minor int64, currency string) error {
	_, err := toStripeAmount(minor, currency)
	return err
}

// toStripeAmount converts minor units of ISO 4217 into Stripe's units.
func toStripeAmount(minor int64, currency string) (int64, error) {
	cur := strings.ToUpper(currency)
	if minor <= 0 {
		return 0, fmt.Errorf("amount must be positive")
	}
	if !iso4217.Valid(cur) {
		return 0, fmt.Errorf("%q is not an ISO 4217 currency", currency)
	}
	isoDigits := iso4217.Digits(cur)
	digits, named := stripeDigits[cur]
	switch {
	case !named && isoDigits != 2:
		return 0, fmt.Errorf("%s is not a currency CMPay sends to Stripe (its amounts have %d decimals)", cur, isoDigits)
	case !named:
		return minor, nil
	case digits == 3 && minor%10 != 0:
		return 0, fmt.Errorf("%s amounts must be multiples of 0.010 at Stripe", cur)
	case digits >= isoDigits:
		scale := pow10(digits - isoDigits)
		if minor > math.MaxInt64/scale {
			return 0, fmt.Errorf("amount too large")
		}
		return minor * scale, nil
	}
	scale := pow10(isoDigits - digits)
	if minor%scale != 0 {
		return 0, fmt.Errorf("%s amounts must be whole units at Stripe", cur)
	}
	return minor / scale, nil
}

// fromStripeAmount converts an amount in Stripe's units into ISO 4217's
// minor units.
func fromStripeAmount(amount int64, currency string) int64 {
	cur := strings.ToUpper(currency)
	isoDigits := iso4217.Digits(cur)
	digits, named := stripeDigits[cur]
	if !named {
		return amount
	}
	if digits >= isoDigits {
		return amount / pow10(digits-isoDigits)
	}
	return amount * pow10(isoDigits-digits)
}

func pow10(n int) int64 {
	p := int64(1)
	for range n {
		p *= 10
	}
	return p
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

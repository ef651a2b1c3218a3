package web

import (
	"cmp"
	"crypto/rand"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/requestid"
	"github.com/cmpay/cmpay/staff"
)

// The payment page's actions: capture, cancel and refund, for operators and
// admins. Each form carries an idempotency key made when the page was
// rendered, so a double click, a resubmitted form or the same page in two
// tabs sends one key twice: the payments engine applies it once and answers
// the second with Replayed. The actions go through payments.Service like
// the API's, with the staff member and address as the attempt's origin, so
// the same rules hold and the engine's attempt row (written in the same
// statement as the change) is the audit record. A success redirects (303)
// to the payment's page with ?done=<key>, which says what the key did; a
// refusal shows the page again with why, and nothing is done.

// actionForms are the forms a payment's status allows; nil fields are not shown.
type actionForms struct {
	Capture, Cancel, Refund *actionForm
}

// actionForm is one action's form as rendered.
type actionForm struct {
	// Key is the idempotency key the form sends.
	Key string
	// Amount and Reason prefill the inputs; Max is what is available.
	Amount, Reason, Max string
}

// newActionKey makes a form's idempotency key: "admin-" and 128 random bits.
func newActionKey() string { return "admin-" + rand.Text() }

// newActionForms offers what p's status allows, each with a new key:
// capture (prefilled with all that was authorized) and cancel while
// authorized and no capture or cancel waits for the processor; refund
// while something captured is left to refund (the amount left blank: a
// refund's amount is typed, never assumed).
func newActionForms(p payments.Payment) *actionForms {
	f := &actionForms{}
	switch {
	case p.PendingOperation != "":
		// The processor has not answered the capture or cancel sent: a
		// second one would be refused (PAYMENT_STATE_CONFLICT).
	case p.Status == payments.StatusAuthorized:
		f.Capture = &actionForm{Key: newActionKey(), Amount: p.Amount.String(), Max: money(p.Amount)}
		f.Cancel = &actionForm{Key: newActionKey()}
	case p.Status == payments.StatusCaptured || p.Status == payments.StatusPartiallyRefunded:
		if left := p.Refundable(); left.Minor > 0 {
			f.Refund = &actionForm{Key: newActionKey(), Max: money(left)}
		}
	}
	return f
}

// noActionText says why the payment page offers no action: what waits
// for the processor or the payer when something does (CMPay resolves it,
// so nobody should redo it), else the status that allows none.
func noActionText(v paymentView) string {
	p := v.Payment
	const resolves = " CMPay resolves it, nothing to do."
	switch {
	case p.PendingOperation == payments.OpCapture:
		return "A capture of " + pendingCaptureAmount(v) + " waits for the processor;" + resolves
	case p.PendingOperation == payments.OpCancel:
		return "A cancel of the authorization waits for the processor;" + resolves
	case p.Status == payments.StatusProcessing:
		return "The payment waits for the processor's answer;" + resolves
	case p.Status == payments.StatusPending:
		return "The payment waits for its payer; CMPay learns from the processor when it is paid or expires, nothing to do."
	case p.Reserved.Minor > 0 && p.Refundable().Minor <= 0:
		return "Refunds of " + money(p.Reserved) + " wait for the processor and hold all that is left to refund;" +
			" CMPay resolves them, nothing to do."
	}
	return "Nothing can be done to a payment that is " + string(p.Status) + "."
}

// pendingCaptureAmount is what the capture waiting for the processor
// asked for: the newest applied capture's amount, else all authorized.
func pendingCaptureAmount(v paymentView) string {
	for i := len(v.Attempts) - 1; i >= 0; i-- {
		if a := v.Attempts[i]; a.Operation == payments.OpCapture && a.Outcome == payments.OutcomeApplied && a.Amount != "" {
			return a.Amount
		}
	}
	return money(v.Payment.Amount)
}

func (f *actionForms) any() bool { return f.Capture != nil || f.Cancel != nil || f.Refund != nil }

func (a *admin) capture(w http.ResponseWriter, r *http.Request) { a.act(w, r, staff.ActCapture) }
func (a *admin) cancel(w http.ResponseWriter, r *http.Request)  { a.act(w, r, staff.ActCancel) }
func (a *admin) refund(w http.ResponseWriter, r *http.Request)  { a.act(w, r, staff.ActRefund) }

// typedAmountProblem says what is wrong with an amount typed in an admin
// form, "" when nothing is (or none was typed). The API takes any decimal
// text, exponents included; a person types digits and a point, so what
// the API would take otherwise ("1e1", which meant 10.00) is refused here,
// and "1,50" with how to write it. Other text is left to the engine's
// own message.
func typedAmountProblem(text string) string {
	digits := func(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
	if w, f, comma := strings.Cut(text, ","); comma && digits(w) && digits(f) {
		return "use a point for the decimals: " + w + "." + f
	}
	if !strings.ContainsAny(text, "eE+") {
		return ""
	}
	if _, err := payments.ParseAmount(text, "BRL"); err != nil {
		return "" // the engine refuses it, saying why
	}
	return "type the amount as digits with an optional point, like 12.50"
}

// maxFormBytes bounds an admin form's body.
const maxFormBytes = 16 << 10

func (a *admin) act(w http.ResponseWriter, r *http.Request, action staff.Action) {
	ctx := r.Context()
	sess, _ := sessionFrom(ctx)
	id := r.PathValue("id")
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		a.actionFailed(w, r, action, id, &payments.InvalidInputError{Problems: []payments.Problem{{Message: "the form could not be read"}}}, "", "")
		return
	}
	key := r.PostFormValue("idempotency_key")
	amountText := strings.TrimSpace(r.PostFormValue("amount"))
	reasonText := strings.TrimSpace(r.PostFormValue("reason"))
	origin := payments.Origin{Transport: "admin", Actor: sess.Account.Username, Address: a.addr(r)}
	var amount, reason *string
	if amountText != "" {
		amount = &amountText
	}
	if reasonText != "" {
		reason = &reasonText
	}

	if problem := typedAmountProblem(amountText); problem != "" {
		a.actionFailed(w, r, action, id, &payments.InvalidInputError{Problems: []payments.Problem{{Field: "amount", Message: problem}}}, amountText, reasonText)
		return
	}
	var err error
	switch action {
	case staff.ActCapture:
		_, err = a.svc.Capture(ctx, payments.CaptureRequest{PaymentID: id, Amount: amount, IdempotencyKey: key, Origin: origin})
	case staff.ActCancel:
		_, err = a.svc.Cancel(ctx, payments.CancelRequest{PaymentID: id, IdempotencyKey: key, Origin: origin})
	case staff.ActRefund:
		if amount == nil {
			// The API refunds all that is left when no amount is given;
			// here a refund's amount is always typed, never assumed.
			err = &payments.InvalidInputError{Problems: []payments.Problem{{Field: "amount", Message: "enter the amount to refund"}}}
			break
		}
		_, err = a.svc.Refund(ctx, payments.RefundRequest{PaymentID: id, Amount: amount, Reason: reason, IdempotencyKey: key, Origin: origin})
	}
	if err != nil {
		a.actionFailed(w, r, action, id, err, amountText, reasonText)
		return
	}
	http.Redirect(w, r, "/admin/payments/"+url.PathEscape(id)+"?done="+url.QueryEscape(key)+"#result", http.StatusSeeOther)
}

// actionFailed shows the payment again with why nothing was done. A
// refusal by a business rule or a reused key is already on record as the
// engine's attempt; anything that stopped before the engine recorded an
// attempt (bad input, an unknown payment, our own failure) is audited here.
func (a *admin) actionFailed(w http.ResponseWriter, r *http.Request, action staff.Action, id string, err error, amount, reason string) {
	ctx := r.Context()
	sess, _ := sessionFrom(ctx)
	who := sess.Actor(a.addr(r))
	var (
		invalid   *payments.InvalidInputError
		conflict  *payments.StateConflictError
		exceeds   *payments.AmountExceedsError
		reused    *payments.KeyReusedError
		refused   *payments.ProcessorRefusedError
		elsewhere *payments.ProcessorUnavailableError
		status    int
		msg       string
	)
	switch {
	case errors.As(err, &invalid):
		status, msg = http.StatusBadRequest, "Nothing was done: "+invalid.Error()+"."
	case errors.As(err, &conflict):
		status, msg = http.StatusConflict, "Nothing was done: "+conflict.Error()+"."
	case errors.As(err, &exceeds):
		status, msg = http.StatusUnprocessableEntity, "Nothing was done: cannot "+string(action)+" "+money(exceeds.Requested)+
			"; "+money(exceeds.Available)+" is available."
	case errors.As(err, &refused):
		status, msg = http.StatusPaymentRequired, "Nothing was done: the processor refused to "+string(action)+
			" ("+cmp.Or(refused.Code, "no code given")+"). Check the payment at the processor before trying again."
	case errors.As(err, &reused):
		status, msg = http.StatusConflict, "Nothing was done: this form's idempotency key was already used for a different request "+
			"(another amount or action, perhaps from another tab). Check the payment as it is now before trying again."
	case errors.As(err, &elsewhere):
		status, msg = http.StatusServiceUnavailable, "Nothing was done: this payment was made at "+elsewhere.Processor+
			", which this server is not set up for; a server with PROCESSOR="+elsewhere.Processor+" can do it."
	case errors.Is(err, payments.ErrNotFound):
		if err := a.staff.Record(ctx, who, action, id, staff.OutcomeFailed, "no such payment"); err != nil {
			serverError(w, r, err)
			return
		}
		render(w, r, http.StatusNotFound, notFoundPage(id))
		return
	default:
		// Our fault: the engine commits a change whole or not at all, so
		// whether it happened shows on the payment's page.
		_ = a.staff.Record(ctx, who, action, id, staff.OutcomeError, "internal error; request id "+requestid.From(ctx))
		serverError(w, r, err)
		return
	}
	// The engine records the attempts it judged; these it refused before.
	if invalid != nil || elsewhere != nil {
		detail := msg
		if invalid != nil {
			detail = invalid.Error()
		}
		if err := a.staff.Record(ctx, who, action, id, staff.OutcomeFailed, detail); err != nil {
			serverError(w, r, err)
			return
		}
	}
	view, err := a.paymentView(ctx, id)
	if errors.Is(err, payments.ErrNotFound) {
		render(w, r, http.StatusNotFound, notFoundPage(id))
		return
	}
	if err != nil {
		serverError(w, r, err)
		return
	}
	view.Problem = msg
	// Keep what was typed, with a new key: this one may now be bound.
	if f := view.Actions; f != nil {
		switch {
		case action == staff.ActCapture && f.Capture != nil:
			f.Capture.Amount = amount
		case action == staff.ActRefund && f.Refund != nil:
			f.Refund.Amount, f.Refund.Reason = amount, reason
		}
	}
	render(w, r, status, paymentPage(view))
}

// actionResult is what the payment page says after an action's redirect.
type actionResult struct {
	// Replayed: the key had been applied before; this submission did nothing.
	Replayed bool
	// What was done, in words ("Refunded 10.50 BRL"), when and by whom.
	What string
	At   time.Time
	By   string
}

// resultOf says what the admin's request with key did to the payment, from
// its attempts: the latest request with the key decides whether this one
// was applied or found it done, the applied one says what was done. Nil
// when the key applied nothing to this payment (a made-up ?done=).
func resultOf(v paymentView, key string) *actionResult {
	if key == "" {
		return nil
	}
	var latest, applied *attemptView
	for i := range v.Attempts {
		at := &v.Attempts[i]
		if at.IdempotencyKey != key || at.Transport != "admin" {
			continue
		}
		latest = at
		if at.Outcome == payments.OutcomeApplied {
			applied = at
		}
	}
	if latest == nil || applied == nil || latest.Outcome != payments.OutcomeApplied && latest.Outcome != payments.OutcomeReplayed {
		return nil
	}
	return &actionResult{What: actionWords(v, applied, ""), Replayed: latest.Outcome == payments.OutcomeReplayed,
		At: applied.At, By: applied.Actor}
}

// waiting is said of an operation whose processor has not answered yet.
const waiting = " sent; the processor has not answered yet"

// actionWords says what applied, a staff member's capture, cancel or
// refund, came to at the processor as the page shows it: done, waiting
// for its answer, or refused or failed there. A refund's note
// (" (reason)") follows its amount.
func actionWords(v paymentView, applied *attemptView, note string) string {
	p := v.Payment
	switch applied.Operation {
	case payments.OpCapture:
		switch {
		case p.PendingOperation == payments.OpCapture:
			return "Capture of " + cmp.Or(applied.Amount, money(p.Amount)) + waiting
		case p.Captured.Minor > 0:
			return "Captured " + cmp.Or(applied.Amount, money(p.Captured))
		}
		return "Capture of " + cmp.Or(applied.Amount, money(p.Amount)) + " refused by the processor"
	case payments.OpCancel:
		switch {
		case p.PendingOperation == payments.OpCancel:
			return "Cancel" + waiting
		case p.Status == payments.StatusCanceled:
			return "Canceled the authorization"
		}
		return "Cancel refused by the processor"
	case payments.OpRefund:
		for _, rf := range v.Refunds {
			if rf.ID != applied.RefundID {
				continue
			}
			amount := money(rf.Amount) + note
			switch rf.Status {
			case payments.RefundProcessing:
				return "Refund of " + amount + waiting
			case payments.RefundFailed:
				if !rf.ReturnedAt.IsZero() {
					return "Refunded " + amount + ", then returned by the payer's bank (" + cmp.Or(rf.FailureCode, "no code given") + ")"
				}
				return "Refund of " + amount + " failed at the processor (" + cmp.Or(rf.FailureCode, "no code given") + ")"
			}
			return "Refunded " + amount
		}
		return "Refunded " + cmp.Or(applied.Amount, "all that was left") + note
	}
	return ""
}

// appliedText is the timeline's line for an applied capture, cancel or
// refund: worded by where the operation stands at the processor now
// (actionWords), since APPLIED only says CMPay took the request, and a
// capture the processor has not answered must not read as captured.
func appliedText(v paymentView, a attemptView) string {
	return actionWords(v, &a, reasonText(a.Params)) + "."
}

// Package sandbox is CMPay's built-in processor: no network, no state of
// its own, deterministic. It answers by the payment method token, with
// Stripe's test tokens, so a client's test suite runs against either:
//
//	none, pm_card_visa, pm_card_mastercard   approve
//	pm_card_chargeDeclined                   decline: card_declined
//	pm_card_chargeDeclinedInsufficientFunds  decline: insufficient_funds
//	pm_sandbox_slow                          approve, but the first send is
//	                                         answered only at the deadline
//	anything else                            decline: invalid_payment_method
//
// Captures, cancels and refunds always succeed. With SANDBOX_METHODS=async
// a Pix or boleto is pending, with a made-up but well-formed Pix code or
// boleto line, until Pay or its expiry.
//
// The sandbox keeps nothing: every answer is a pure function of the
// request, the clock and the configuration, so every instance of CMPay
// gives the same answer to the same request, and recovery on another
// instance settles what the first one started. In particular the slow
// token's "first call" is not remembered anywhere: it is the request's
// Attempt, which the caller stores with the operation (0 on the first
// send). Process memory would not do: recovery may run on an instance that
// never saw the first call, or after a restart.
//
// What a payment is lives in its reference, which encodes the create's
// request and outcome (see reference.go), so GetPayment can answer without
// state. What happened after the create (a capture, a cancel, a refund, a
// Pay) is in CMPay's database only: the sandbox's reads give the state the
// create left, or Expired once a pending payment's expiry has passed. The
// sandbox cannot search or list (KindUnsupported); it never needs to,
// since asking again with the same key gives the same answer.
package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/cmpay/cmpay/processor"
)

// The sandbox's tokens.
const (
	TokenVisa                    = "pm_card_visa"
	TokenMastercard              = "pm_card_mastercard"
	TokenDeclined                = "pm_card_chargeDeclined"
	TokenInsufficientFunds       = "pm_card_chargeDeclinedInsufficientFunds"
	TokenSlow                    = "pm_sandbox_slow"
	CodeCardDeclined             = "card_declined"
	CodeInsufficientFunds        = "insufficient_funds"
	CodeInvalidPaymentMethod     = "invalid_payment_method"
	CodePaymentExpired           = "payment_expired"
	CodePaymentNotPending        = "payment_not_pending"
	CodeCaptureMethodUnsupported = "capture_method_unsupported"
)

// Sandbox is the built-in processor. The zero value is not usable: call New.
type Sandbox struct {
	async        bool
	pixExpiry    time.Duration
	boletoExpiry time.Duration
	timeout      time.Duration
	now          func() time.Time
}

// Option changes a Sandbox made by New.
type Option func(*Sandbox)

// WithClock makes the sandbox read the time from now (tests).
func WithClock(now func() time.Time) Option { return func(s *Sandbox) { s.now = now } }

// New makes a sandbox from the configuration's SANDBOX_* settings and
// PROCESSOR_TIMEOUT (the longest the slow token's first send waits when
// the caller's context has no earlier deadline).
func New(cfg processor.Config, opts ...Option) *Sandbox {
	s := &Sandbox{
		async:        cfg.SandboxMethods == processor.SandboxAsync,
		pixExpiry:    cfg.SandboxPixExpiry,
		boletoExpiry: cfg.SandboxBoletoExpiry,
		timeout:      cfg.Timeout,
		now:          time.Now,
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

var _ processor.Processor = (*Sandbox)(nil)

// Name is "sandbox".
func (s *Sandbox) Name() string { return processor.NameSandbox }

// tokenOutcome is the decline code a token gets, "" when it approves.
func tokenOutcome(token string) string {
	switch token {
	case "", TokenVisa, TokenMastercard, TokenSlow:
		return ""
	case TokenDeclined:
		return CodeCardDeclined
	case TokenInsufficientFunds:
		return CodeInsufficientFunds
	}
	return CodeInvalidPaymentMethod
}

// CreatePayment answers by the token (see the package comment).
func (s *Sandbox) CreatePayment(ctx context.Context, req processor.CreatePaymentRequest) (processor.Payment, error) {
	if err := validateCreate(req); err != nil {
		return processor.Payment{}, err
	}
	async := s.async && req.Method.Async()
	if async && !req.Capture {
		return processor.Payment{}, &processor.Error{Kind: processor.KindInvalidRequest, Op: "create",
			Code: CodeCaptureMethodUnsupported, Message: "Pix and boleto are captured when paid"}
	}
	if req.PaymentMethodToken == TokenSlow && req.Attempt == 0 {
		return processor.Payment{}, s.waitOut(ctx)
	}
	ref := reference{method: req.Method, capture: req.Capture, amountMinor: req.AmountMinor,
		currency: req.Currency, outcome: tokenOutcome(req.PaymentMethodToken), seed: seedOf(req.IdempotencyKey)}
	if async {
		expiry := s.pixExpiry
		if req.Method == processor.MethodBoleto {
			expiry = s.boletoExpiry
		}
		ref.expiresAt = wholeSecondAfter(s.now().Add(expiry))
	}
	if ref.outcome != "" {
		return processor.Payment{}, &processor.Error{Kind: processor.KindDeclined, Op: "create",
			Code: ref.outcome, HTTPStatus: 402, Reference: ref.String(), Message: "the sandbox declines this token"}
	}
	p := s.payment(ref)
	p.PaymentID = req.PaymentID
	return p, nil
}

// wholeSecondAfter is t in Unix seconds, rounded up: the reference keeps
// whole seconds (references stored before read them so), and rounding
// down gave the payer less than SANDBOX_PIX_EXPIRY (19.878 s of 20).
func wholeSecondAfter(t time.Time) int64 {
	sec := t.Unix()
	if t.Nanosecond() > 0 {
		sec++
	}
	return sec
}

func validateCreate(req processor.CreatePaymentRequest) error {
	invalid := func(msg string) error {
		return &processor.Error{Kind: processor.KindInvalidRequest, Op: "create", Code: "parameter_invalid", Message: msg}
	}
	switch {
	case processor.ValidateKey(req.IdempotencyKey) != nil:
		return invalid(processor.ValidateKey(req.IdempotencyKey).Error())
	case req.AmountMinor <= 0:
		return invalid("amount must be positive")
	case len(req.Currency) != 3:
		return invalid("currency must be a three-letter code")
	case !req.Method.Valid():
		return invalid("unknown payment method " + string(req.Method))
	}
	return nil
}

// waitOut is the slow token's first send: no answer until the caller's
// deadline (or PROCESSOR_TIMEOUT, whichever comes first), then a timeout,
// as a processor that did the work but whose answer never arrived.
func (s *Sandbox) waitOut(ctx context.Context) error {
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	kind := processor.KindTimeout
	select {
	case <-ctx.Done():
		kind, _ = processor.ContextKind(ctx)
	case <-t.C:
	}
	return &processor.Error{Kind: kind, Op: "create", Message: "the sandbox's slow token answers late on its first send"}
}

// payment is the state a reference's payment is in now.
func (s *Sandbox) payment(ref reference) processor.Payment {
	p := processor.Payment{Reference: ref.String(), AmountMinor: ref.amountMinor, Currency: ref.currency,
		Created: s.now().UTC()}
	switch {
	case ref.outcome != "":
		p.State, p.DeclineCode = processor.PaymentDeclined, ref.outcome
	case ref.expiresAt != 0 && !s.now().Before(time.Unix(ref.expiresAt, 0)):
		p.State = processor.PaymentExpired
	case ref.expiresAt != 0:
		p.State, p.NextAction = processor.PaymentPending, nextAction(ref)
	case ref.capture:
		p.State, p.CapturedMinor = processor.PaymentCaptured, ref.amountMinor
	default:
		p.State = processor.PaymentAuthorized
	}
	return p
}

func nextAction(ref reference) *processor.NextAction {
	na := &processor.NextAction{ExpiresAt: time.Unix(ref.expiresAt, 0).UTC()}
	if ref.method == processor.MethodPix {
		na.Type, na.PixCode = processor.NextActionPixCode, pixCode(ref.seed, ref.amountMinor, ref.currency)
	} else {
		na.Type, na.BoletoLine = processor.NextActionBoleto, boletoLine(ref.seed, ref.amountMinor, ref.currency, na.ExpiresAt)
	}
	return na
}

// seedOf is the hex digest that the Pix code and boleto line are drawn
// from: the same key always gives the same code.
func seedOf(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:seedLen]
}

// CapturePayment always succeeds (payments made before the sandbox gave
// references included: the reference is only echoed).
func (s *Sandbox) CapturePayment(_ context.Context, req processor.CaptureRequest) (processor.Payment, error) {
	if err := processor.ValidateKey(req.IdempotencyKey); err != nil {
		return processor.Payment{}, &processor.Error{Kind: processor.KindInvalidRequest, Op: "capture", Message: err.Error()}
	}
	p := processor.Payment{Reference: req.Reference, State: processor.PaymentCaptured,
		AmountMinor: req.AmountMinor, CapturedMinor: req.AmountMinor, Created: s.now().UTC()}
	if ref, err := parseReference(req.Reference); err == nil {
		p.AmountMinor, p.Currency = ref.amountMinor, ref.currency
	}
	return p, nil
}

// CancelPayment always succeeds.
func (s *Sandbox) CancelPayment(_ context.Context, req processor.CancelRequest) (processor.Payment, error) {
	if err := processor.ValidateKey(req.IdempotencyKey); err != nil {
		return processor.Payment{}, &processor.Error{Kind: processor.KindInvalidRequest, Op: "cancel", Message: err.Error()}
	}
	p := processor.Payment{Reference: req.Reference, State: processor.PaymentCanceled, Created: s.now().UTC()}
	if ref, err := parseReference(req.Reference); err == nil {
		p.AmountMinor, p.Currency = ref.amountMinor, ref.currency
	}
	return p, nil
}

// RefundPayment always succeeds at once.
func (s *Sandbox) RefundPayment(_ context.Context, req processor.RefundRequest) (processor.Refund, error) {
	if err := processor.ValidateKey(req.IdempotencyKey); err != nil {
		return processor.Refund{}, &processor.Error{Kind: processor.KindInvalidRequest, Op: "refund", Message: err.Error()}
	}
	if req.AmountMinor <= 0 {
		return processor.Refund{}, &processor.Error{Kind: processor.KindInvalidRequest, Op: "refund",
			Code: "parameter_invalid", Message: "amount must be positive"}
	}
	r := refundReference{amountMinor: req.AmountMinor, seed: seedOf(req.IdempotencyKey)}
	return processor.Refund{Reference: r.String(), PaymentReference: req.PaymentReference, RefundID: req.RefundID,
		State: processor.RefundSucceeded, AmountMinor: req.AmountMinor, Created: s.now().UTC()}, nil
}

// GetPayment reads the state the reference's create left, or Expired.
func (s *Sandbox) GetPayment(_ context.Context, reference string) (processor.Payment, error) {
	ref, err := parseReference(reference)
	if err != nil {
		return processor.Payment{}, &processor.Error{Kind: processor.KindNotFound, Op: "get_payment",
			Code: "resource_missing", Message: "no such sandbox payment", Err: err}
	}
	return s.payment(ref), nil
}

// GetRefund reads a refund: sandbox refunds always succeeded.
func (s *Sandbox) GetRefund(_ context.Context, reference string) (processor.Refund, error) {
	r, err := parseRefundReference(reference)
	if err != nil {
		return processor.Refund{}, &processor.Error{Kind: processor.KindNotFound, Op: "get_refund",
			Code: "resource_missing", Message: "no such sandbox refund", Err: err}
	}
	return processor.Refund{Reference: reference, State: processor.RefundSucceeded, AmountMinor: r.amountMinor}, nil
}

// FindPayments is not something the sandbox can do: it keeps no records.
func (s *Sandbox) FindPayments(context.Context, string) ([]processor.Payment, error) {
	return nil, &processor.Error{Kind: processor.KindUnsupported, Op: "find_payments",
		Message: "the sandbox keeps no records: ask again with the same key"}
}

// ListRefunds is not something the sandbox can do: it keeps no records.
func (s *Sandbox) ListRefunds(context.Context, string) ([]processor.Refund, error) {
	return nil, &processor.Error{Kind: processor.KindUnsupported, Op: "list_refunds",
		Message: "the sandbox keeps no records: ask again with the same key"}
}

// Pay is the payer paying a pending Pix or boleto
// (POST /sandbox/payments/{id}/pay): the payment is captured, unless it
// has expired or was never pending. CMPay records the answer; the sandbox
// keeps nothing, so paying twice answers Captured twice.
func (s *Sandbox) Pay(_ context.Context, reference string) (processor.Payment, error) {
	ref, err := parseReference(reference)
	if err != nil {
		return processor.Payment{}, &processor.Error{Kind: processor.KindNotFound, Op: "pay",
			Code: "resource_missing", Message: "no such sandbox payment", Err: err}
	}
	p := s.payment(ref)
	switch p.State {
	case processor.PaymentPending:
		p.State, p.NextAction, p.CapturedMinor = processor.PaymentCaptured, nil, ref.amountMinor
		return p, nil
	case processor.PaymentExpired:
		return processor.Payment{}, &processor.Error{Kind: processor.KindInvalidRequest, Op: "pay",
			Code: CodePaymentExpired, Message: "the payment expired before it was paid", Reference: reference}
	}
	return processor.Payment{}, &processor.Error{Kind: processor.KindInvalidRequest, Op: "pay",
		Code: CodePaymentNotPending, Message: "only a pending Pix or boleto can be paid", Reference: reference}
}

// PaysLater says whether Pix and boleto are left pending for their payer
// (SANDBOX_METHODS=async) rather than paid at once.
func (s *Sandbox) PaysLater() bool { return s.async }

var _ processor.Foreseer = (*Sandbox)(nil)

// ForeseesCreate is true for every token but the slow one's first send,
// and for Pix and boleto left pending (SANDBOX_METHODS=async): the
// sandbox's answer is a pure function of the request, but a pending
// payment's next action is recorded when the processor is asked, as with
// any processor.
func (s *Sandbox) ForeseesCreate(req processor.CreatePaymentRequest) bool {
	if s.async && req.Method.Async() {
		return false
	}
	return req.PaymentMethodToken != TokenSlow || req.Attempt > 0
}

// ForeseesChanges is true: captures, cancels and refunds always succeed at
// once.
func (s *Sandbox) ForeseesChanges() bool { return true }

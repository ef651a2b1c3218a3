package payments

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cmpay/cmpay/internal/clientid"
)

// Limits on what a client may send.
const (
	MaxKeyLen      = 100
	MaxClientIDLen = 100
	MaxReasonLen   = 500
	// MaxPaymentMethodTokenLen bounds a paymentMethodToken, as Stripe
	// bounds its ids.
	MaxPaymentMethodTokenLen = 255
)

// Origin is who sent a request, recorded with its attempt.
type Origin struct {
	// Transport names the API the request came through: graphql, rest or admin.
	Transport string
	// Actor and Address are, for the admin, the staff member and the
	// address they acted from.
	Actor, Address string
	// Client, when set, is the only client whose payments the request may
	// create or change (a token bound to a client); anything else is
	// refused with ErrForbidden and nothing is done.
	Client string
}

// CreateRequest is a request to create a payment, as a transport received
// it. Amount is decimal text ("10.5", "10.50", "1e1"): transports pass the
// digits the client sent, never a float.
type CreateRequest struct {
	ClientID       string
	Amount         string
	Currency       string
	Method         Method
	IdempotencyKey string
	// Capture false creates an authorized payment, to be captured or
	// canceled later; nil means true.
	Capture *bool
	// PaymentMethodToken is the payment method at the processor (Stripe:
	// a PaymentMethod id, pm_…); nil for none. Part of the payload the key
	// is bound to.
	PaymentMethodToken *string
	Origin
}

// CaptureRequest captures an authorized payment: Amount (decimal text, in
// the payment's currency) at most what was authorized; nil captures all of
// it.
type CaptureRequest struct {
	PaymentID      string
	Amount         *string
	IdempotencyKey string
	Origin
}

// CancelRequest cancels an authorized payment.
type CancelRequest struct {
	PaymentID      string
	IdempotencyKey string
	Origin
}

// RefundRequest refunds a captured payment: Amount at most what is left to
// refund; nil refunds all that is left.
type RefundRequest struct {
	PaymentID      string
	Amount         *string
	Reason         *string
	IdempotencyKey string
	Origin
}

// command is a validated request of any operation, normalised: what the
// engine (engine.go) and the stores work with.
type command struct {
	op     Operation
	key    string
	params Params
	// encoded is params' canonical text, which the key and its attempts
	// store, and fp its fingerprint: both made once, by seal.
	encoded string
	fp      []byte
	Origin

	// A create's client and payload, and the id its payment gets if it is
	// created.
	clientID string
	amount   Money
	method   Method
	capture  bool
	// token is a create's paymentMethodToken, "" for none.
	token string
	// plan is what a create writes about its processor (operations.go).
	plan *createPlan
	// opID is a capture's, cancel's or refund's processor operation, if
	// it makes one.
	opID string

	// A capture's, cancel's or refund's payment; its amount, if one was
	// given; a refund's reason, and the id its refund gets if applied.
	paymentID string
	change    *changeAmount
	reason    *string

	// newID is the id of what the request creates if it is applied: a
	// payment for a create, a refund for a refund.
	newID string

	// sentBefore says that a statement carrying the request may have
	// committed without answering (batch.go runs it again): a replay,
	// rejection or refusal then looks for its own attempt before recording
	// one, which it does not do otherwise, for speed.
	sentBefore bool
}

// requestID names the request in the attempt that records its replay,
// rejection or refusal (models.IdempotencyAttempt.RequestID): the id made
// for its payment if it is a create, for its processor operation if not.
// Both are made for the request alone, whether used or not.
func (c *command) requestID() string {
	if c.op == OpCreate {
		return c.newID
	}
	return c.opID
}

// problems gathers everything wrong with a request, so a client can fix it
// in one go.
type problems []Problem

func (ps *problems) add(field string, err error) {
	if err != nil {
		*ps = append(*ps, Problem{Field: field, Message: err.Error()})
	}
}

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &InvalidInputError{Problems: ps}
}

// command checks every field and reports all problems at once.
func (r CreateRequest) command() (*command, error) {
	r.ClientID = clientid.Normalize(r.ClientID)
	var ps problems
	ps.add("idempotencyKey", ValidateKey(r.IdempotencyKey))
	ps.add("clientId", validateClientID(r.ClientID))
	ps.add("method", validateMethod(r.Method))
	if r.PaymentMethodToken != nil {
		ps.add("paymentMethodToken", validatePaymentMethodToken(*r.PaymentMethodToken))
	}

	var amount Money
	code, err := NormalizeCurrency(r.Currency)
	ps.add("currency", err)
	if err == nil {
		amount, err = ParseAmount(r.Amount, code)
		ps.add("amount", err)
	} else {
		// Without a currency the digits can't be checked, but a malformed
		// number is still worth reporting in the same response.
		_, err = parseDecimal(r.Amount)
		ps.add("amount", err)
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	capture := r.Capture == nil || *r.Capture
	cmd := &command{
		op: OpCreate, key: r.IdempotencyKey, Origin: r.Origin,
		clientID: r.ClientID, amount: amount, method: r.Method, capture: capture,
		params: createParams(amount, r.Method, capture),
		newID:  newPaymentID(),
	}
	if r.PaymentMethodToken != nil {
		cmd.token = *r.PaymentMethodToken
		cmd.params[FieldPaymentMethodToken] = cmd.token
	}
	cmd.seal()
	return cmd, nil
}

// seal encodes the command's params and fingerprints them, once they are
// complete.
func (cmd *command) seal() {
	cmd.encoded = cmd.params.encode()
	cmd.fp = fingerprintOf(cmd.encoded)
}

// createParams are the parameters a create's key is bound to.
func createParams(amount Money, method Method, capture bool) Params {
	return Params{
		FieldOperation: string(OpCreate),
		FieldAmount:    amount.canonical(),
		FieldCurrency:  amount.Currency,
		FieldMethod:    string(method),
		FieldCapture:   strconv.FormatBool(capture),
	}
}

// version1Params rebuilds the parameters of a key stored before keys kept
// them (fingerprint version 1): such a key was a create, captured, and
// its payment holds what it asked for.
func version1Params(p Payment) Params {
	return createParams(p.Amount, p.Method, true)
}

func (r CaptureRequest) command() (*command, error) {
	return changeCommand(OpCapture, r.PaymentID, r.Amount, nil, r.IdempotencyKey, r.Origin)
}

func (r CancelRequest) command() (*command, error) {
	return changeCommand(OpCancel, r.PaymentID, nil, nil, r.IdempotencyKey, r.Origin)
}

func (r RefundRequest) command() (*command, error) {
	return changeCommand(OpRefund, r.PaymentID, r.Amount, r.Reason, r.IdempotencyKey, r.Origin)
}

// changeCommand validates a capture, cancel or refund. The payment id is not
// validated: an id this API never issued, whatever its form, is NOT_FOUND,
// which the store says once it has looked.
func changeCommand(op Operation, paymentID string, amount, reason *string, key string, o Origin) (*command, error) {
	var ps problems
	ps.add("idempotencyKey", ValidateKey(key))
	cmd := &command{op: op, key: key, Origin: o, paymentID: paymentID, reason: reason,
		params: Params{FieldOperation: string(op), FieldPaymentID: paymentID}}
	if amount != nil {
		a, err := parseChangeAmount(*amount)
		ps.add("amount", err)
		cmd.change = &a
		cmd.params[FieldAmount] = a.canonical
	}
	if reason != nil {
		ps.add("reason", validateReason(*reason))
		cmd.params[FieldReason] = *reason
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	if op == OpRefund {
		cmd.newID = newRefundID()
	}
	cmd.opID = newOperationID()
	cmd.seal()
	return cmd, nil
}

// ValidateKey checks an idempotency key: 1 to 100 printable ASCII
// characters (0x20–0x7E), neither starting nor ending with a space. Keys
// are compared exactly as sent; nothing is trimmed. (HTTP trims header
// values, so on REST a key with surrounding spaces cannot even be sent:
// refusing them here keeps one key one key on every transport.)
func ValidateKey(key string) error {
	if strings.TrimSpace(key) == "" {
		return fmt.Errorf("idempotencyKey must not be empty or only whitespace")
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e {
			r, size := utf8.DecodeRuneInString(key[i:])
			found := fmt.Sprintf("%U", r)
			if r == utf8.RuneError && size == 1 { // not UTF-8: U+FFFD would name a character not sent
				found = fmt.Sprintf("the byte 0x%02X, which is not UTF-8,", c)
			}
			return fmt.Errorf("idempotencyKey may contain only printable ASCII characters (0x20-0x7E); found %s at byte %d", found, i)
		}
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("idempotencyKey is %d characters long; the limit is %d", len(key), MaxKeyLen)
	}
	if key[0] == ' ' || key[len(key)-1] == ' ' {
		return fmt.Errorf("idempotencyKey must not start or end with a space")
	}
	return nil
}

// validateClientID: 1 to 100 characters of valid UTF-8, none of them a
// control or invisible format character (Unicode Cc and Cf: bidi overrides,
// zero-width spaces), which would render reversed or invisible where
// support staff read client ids.
func validateClientID(id string) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("clientId must not be empty")
	}
	// U+FFFD is what JSON decoders (Go's, and gqlparser's for literals) put
	// in place of invalid UTF-8 bytes and lone surrogate escapes, so a
	// clientId sent invalid reaches this check holding it.
	if !utf8.ValidString(id) || strings.ContainsRune(id, utf8.RuneError) {
		return fmt.Errorf("clientId is not valid UTF-8 (or holds U+FFFD, the character a decoder puts in place of invalid bytes)")
	}
	if n := utf8.RuneCountInString(id); n > MaxClientIDLen {
		return fmt.Errorf("clientId is %d characters long; the limit is %d", n, MaxClientIDLen)
	}
	return refuseInvisible("clientId", id)
}

// validatePaymentMethodToken: 1 to 255 printable ASCII characters, as
// processors' ids are.
func validatePaymentMethodToken(token string) error {
	if token == "" {
		return fmt.Errorf("paymentMethodToken must not be empty; leave it out for none")
	}
	if len(token) > MaxPaymentMethodTokenLen {
		return fmt.Errorf("paymentMethodToken is %d characters long; the limit is %d", len(token), MaxPaymentMethodTokenLen)
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("paymentMethodToken may contain only printable ASCII characters (0x20-0x7E); found the byte 0x%02X at byte %d", c, i)
		}
	}
	return nil
}

// validateReason: up to 500 characters of valid UTF-8 without control or
// format characters; compared exactly. U+FFFD is refused as in a clientId
// (validateClientID): a reason sent invalid reaches GraphQL holding it,
// where REST refuses the body, and would be stored as what was not sent.
func validateReason(reason string) error {
	if !utf8.ValidString(reason) || strings.ContainsRune(reason, utf8.RuneError) {
		return fmt.Errorf("reason is not valid UTF-8 (or holds U+FFFD, the character a decoder puts in place of invalid bytes)")
	}
	if n := utf8.RuneCountInString(reason); n > MaxReasonLen {
		return fmt.Errorf("reason is %d characters long; the limit is %d", n, MaxReasonLen)
	}
	return refuseInvisible("reason", reason)
}

func refuseInvisible(field, s string) error {
	for i, r := range s {
		if unicode.In(r, unicode.Cc, unicode.Cf) {
			return fmt.Errorf("%s must not contain control or invisible format characters; found %U at byte %d", field, r, i)
		}
	}
	return nil
}

func validateMethod(m Method) error {
	if !m.Valid() {
		names := make([]string, len(Methods))
		for i, known := range Methods {
			names[i] = string(known)
		}
		return fmt.Errorf("method must be one of %s", strings.Join(names, ", "))
	}
	return nil
}

package stripedouble

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The double's payment methods: Stripe's test tokens.
var (
	approvingTokens = map[string]bool{"pm_card_visa": true, "pm_card_mastercard": true, "pm_card_visa_debit": true}
	decliningTokens = map[string]string{
		"pm_card_chargeDeclined":                  "generic_decline",
		"pm_card_chargeDeclinedInsufficientFunds": "insufficient_funds",
	}
)

// authenticationRequired is Stripe's test token of a card that always
// asks for 3-D Secure.
const authenticationRequired = "pm_card_authenticationRequired"

type intent struct {
	ID           string            `json:"id"`
	Object       string            `json:"object"`
	Amount       int64             `json:"amount"`
	Capturable   int64             `json:"amount_capturable"`
	Received     int64             `json:"amount_received"`
	CaptureMode  string            `json:"capture_method"`
	Currency     string            `json:"currency"`
	Status       string            `json:"status"`
	Metadata     map[string]string `json:"metadata"`
	Created      int64             `json:"created"`
	PM           *string           `json:"payment_method"`
	Types        []string          `json:"payment_method_types"`
	LastError    *stripeError      `json:"last_payment_error"`
	NextAction   map[string]any    `json:"next_action"`
	LatestCharge *string           `json:"latest_charge"`
	CanceledAt   *int64            `json:"canceled_at"`
	CancelReason *string           `json:"cancellation_reason"`
	Livemode     bool              `json:"livemode"`

	ledger  Ledger
	created time.Time
}

type refund struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	Amount        int64             `json:"amount"`
	Currency      string            `json:"currency"`
	PaymentIntent string            `json:"payment_intent"`
	Charge        string            `json:"charge"`
	Status        string            `json:"status"`
	FailureReason *string           `json:"failure_reason"`
	Metadata      map[string]string `json:"metadata"`
	Created       int64             `json:"created"`
}

// Ledger is the money one PaymentIntent moved, for asserting that each
// amount moved at most once.
type Ledger struct {
	Amount     int64 // what the intent asks for
	Authorized int64 // held now (amount_capturable)
	Captured   int64 // received
	Refunded   int64 // refunded, succeeded refunds only
	// Counts of money movements by kind, and in all: an authorization (or
	// a charge captured at once: one of each), a capture, a cancel that
	// released the hold, a refund created (whatever its end).
	Authorizations, Captures, Cancels, Refunds, Movements int
}

type stripeError struct {
	Type          string  `json:"type"`
	Code          string  `json:"code,omitempty"`
	DeclineCode   string  `json:"decline_code,omitempty"`
	Message       string  `json:"message"`
	Param         string  `json:"param,omitempty"`
	PaymentIntent *intent `json:"payment_intent,omitempty"`
}

func answerError(status int, typ, code, msg, param string) answer {
	return errorAnswer(status, &stripeError{Type: typ, Code: code, Message: msg, Param: param})
}

func errorAnswer(status int, e *stripeError) answer {
	body, _ := json.Marshal(map[string]any{"error": e})
	return answer{status: status, body: body}
}

func jsonAnswer(v any) answer {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return answer{status: 200, body: body}
}

// writeKeyInUse answers a request whose idempotency key's first request is
// still executing as Stripe does: a 409 of type idempotency_error (the type
// Stripe also gives a key reused with other parameters, with a 400), code
// idempotency_key_in_use, and Stripe-Should-Retry: true.
func writeKeyInUse(w http.ResponseWriter) {
	w.Header().Set("Stripe-Should-Retry", "true")
	writeError(w, answerError(http.StatusConflict, "idempotency_error", "idempotency_key_in_use",
		"There is currently another in-progress request using this Idempotent Key (that probably means you "+
			"submitted twice, and the other request is still going through). Please try again later.", ""))
}

func writeError(w http.ResponseWriter, a answer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// validate refuses what Stripe refuses before executing: nothing is
// stored under the key.
func validate(ep Endpoint, f url.Values) (answer, bool) {
	bad := func(param, msg string) (answer, bool) {
		return answerError(400, "invalid_request_error", "parameter_missing", msg, param), true
	}
	amount := func(name string, required bool) (answer, bool) {
		v := f.Get(name)
		if v == "" && !required {
			return answer{}, false
		}
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n <= 0 {
			return bad(name, "Invalid positive integer: "+name)
		}
		return answer{}, false
	}
	switch ep {
	case CreatePaymentIntent:
		if len(f.Get("currency")) != 3 {
			return bad("currency", "Missing required param: currency.")
		}
		return amount("amount", true)
	case CapturePaymentIntent:
		return amount("amount_to_capture", false)
	case CreateRefund:
		if f.Get("payment_intent") == "" {
			return bad("payment_intent", "Missing required param: payment_intent.")
		}
		return amount("amount", false)
	}
	return answer{}, false
}

// execute runs a validated write; d.mu is held.
func (d *Double) execute(ep Endpoint, id string, f url.Values) answer {
	switch ep {
	case CreatePaymentIntent:
		return d.createIntent(f)
	case CapturePaymentIntent:
		return d.capture(id, f)
	case CancelPaymentIntent:
		return d.cancel(id, "requested_by_customer")
	case CreateRefund:
		return d.createRefund(f)
	}
	panic("not a write: " + string(ep))
}

func (d *Double) nextID(prefix string) string {
	d.seq++
	return fmt.Sprintf("%s_double%06d", prefix, d.seq)
}

func metadata(f url.Values) map[string]string {
	m := map[string]string{}
	for k, v := range f {
		if strings.HasPrefix(k, "metadata[") && strings.HasSuffix(k, "]") {
			m[k[len("metadata["):len(k)-1]] = v[0]
		}
	}
	return m
}

func formList(f url.Values, name string) []string {
	var out []string
	for i := 0; ; i++ {
		v, ok := f[fmt.Sprintf("%s[%d]", name, i)]
		if !ok {
			return append(out, f[name+"[]"]...)
		}
		out = append(out, v...)
	}
}

func (d *Double) createIntent(f url.Values) answer {
	now := d.clock()
	amount, _ := strconv.ParseInt(f.Get("amount"), 10, 64)
	in := &intent{ID: d.nextID("pi"), Object: "payment_intent", Amount: amount, CaptureMode: "automatic",
		Currency: strings.ToLower(f.Get("currency")), Metadata: metadata(f), Created: now.Unix(),
		Types: formList(f, "payment_method_types"), created: now, ledger: Ledger{Amount: amount}}
	if f.Get("capture_method") == "manual" {
		in.CaptureMode = "manual"
	}
	if len(in.Types) == 0 {
		in.Types = []string{"card"}
	}
	method := f.Get("payment_method_data[type]")
	if pm := f.Get("payment_method"); pm != "" {
		in.PM = &pm
		method = in.Types[0]
	}
	async := slices.Contains([]string{"pix", "boleto"}, method)
	if async && in.CaptureMode == "manual" {
		return answerError(400, "invalid_request_error", "parameter_invalid",
			"capture_method=manual is not supported for "+method, "capture_method")
	}
	if in.PM != nil && !async && !approvingTokens[*in.PM] && decliningTokens[*in.PM] == "" && *in.PM != authenticationRequired {
		return answerError(400, "invalid_request_error", "resource_missing",
			"No such PaymentMethod: '"+*in.PM+"'", "payment_method")
	}
	d.intents[in.ID] = in
	d.order = append(d.order, in.ID)
	switch {
	case f.Get("confirm") != "true":
		in.Status = "requires_confirmation"
	case async:
		in.Status, in.NextAction = "requires_action", d.asyncNextAction(in, method, now)
	case in.PM == nil:
		in.Status = "requires_payment_method"
	case *in.PM == authenticationRequired && f.Get("error_on_requires_action") == "true":
		in.Status = "requires_payment_method"
		in.LastError = &stripeError{Type: "card_error", Code: "authentication_required", DeclineCode: "authentication_required",
			Message: "Your card was declined. This transaction requires authentication."}
		d.emit("payment_intent.payment_failed", in.snapshot())
		e := *in.LastError
		e.PaymentIntent = in.snapshot()
		return errorAnswer(402, &e)
	case *in.PM == authenticationRequired:
		// Stripe's test card that always asks for 3-D Secure: the intent
		// waits for the payer, with no money moved, until it is canceled.
		in.Status, in.NextAction = "requires_action", map[string]any{"type": "use_stripe_sdk", "use_stripe_sdk": map[string]any{}}
	case decliningTokens[*in.PM] != "":
		in.Status = "requires_payment_method"
		in.LastError = &stripeError{Type: "card_error", Code: "card_declined", DeclineCode: decliningTokens[*in.PM],
			Message: "Your card was declined.", Param: ""}
		d.emit("payment_intent.payment_failed", in.snapshot())
		e := *in.LastError
		e.PaymentIntent = in.snapshot()
		return errorAnswer(402, &e)
	default:
		d.authorize(in)
	}
	return jsonAnswer(in)
}

// asyncNextAction is the Pix or boleto instructions, expiring as Stripe's
// defaults do (Pix: an hour; boleto: three days).
func (d *Double) asyncNextAction(in *intent, method string, now time.Time) map[string]any {
	if method == "pix" {
		exp := now.Add(time.Hour).Unix()
		return map[string]any{"type": "pix_display_qr_code", "pix_display_qr_code": map[string]any{
			"data":                    "double-pix-code-" + in.ID,
			"expires_at":              exp,
			"hosted_instructions_url": "https://double.invalid/pix/" + in.ID,
		}}
	}
	exp := now.Add(72 * time.Hour).Unix()
	return map[string]any{"type": "boleto_display_details", "boleto_display_details": map[string]any{
		"number":             "99990000000000000000000000000000000000000000000"[:47],
		"expires_at":         exp,
		"hosted_voucher_url": "https://double.invalid/boleto/" + in.ID,
	}}
}

func (d *Double) authorize(in *intent) {
	charge := d.nextID("ch")
	in.LatestCharge = &charge
	in.ledger.Authorizations++
	in.ledger.Movements++
	if in.CaptureMode == "manual" {
		in.Status, in.Capturable, in.ledger.Authorized = "requires_capture", in.Amount, in.Amount
		return
	}
	in.Status, in.Received, in.ledger.Captured = "succeeded", in.Amount, in.Amount
	in.ledger.Captures++
	in.ledger.Movements++
	d.emit("payment_intent.succeeded", in.snapshot())
}

func (d *Double) missing(kind, id string) answer {
	return answerError(404, "invalid_request_error", "resource_missing", fmt.Sprintf("No such %s: '%s'", kind, id), "id")
}

func unexpectedState(in *intent, action string) answer {
	e := &stripeError{Type: "invalid_request_error", Code: "payment_intent_unexpected_state",
		Message:       fmt.Sprintf("This PaymentIntent could not be %s because it has a status of %s.", action, in.Status),
		PaymentIntent: in.snapshot()}
	return errorAnswer(400, e)
}

func (d *Double) capture(id string, f url.Values) answer {
	in := d.intents[id]
	if in == nil {
		return d.missing("payment_intent", id)
	}
	if in.Status != "requires_capture" {
		return unexpectedState(in, "captured")
	}
	amount := in.Capturable
	if v := f.Get("amount_to_capture"); v != "" {
		amount, _ = strconv.ParseInt(v, 10, 64)
	}
	if amount > in.Capturable {
		return answerError(400, "invalid_request_error", "amount_too_large",
			"The amount to capture is greater than the amount capturable", "amount_to_capture")
	}
	in.Status, in.Received, in.Capturable = "succeeded", amount, 0
	in.ledger.Captured, in.ledger.Authorized = amount, 0
	in.ledger.Captures++
	in.ledger.Movements++
	d.emit("payment_intent.succeeded", in.snapshot())
	return jsonAnswer(in)
}

func (d *Double) cancel(id, reason string) answer {
	in := d.intents[id]
	if in == nil {
		return d.missing("payment_intent", id)
	}
	if in.Status == "succeeded" || in.Status == "canceled" {
		return unexpectedState(in, "canceled")
	}
	now := d.clock().Unix()
	in.Status, in.Capturable, in.CanceledAt, in.CancelReason, in.NextAction = "canceled", 0, &now, &reason, nil
	in.ledger.Authorized = 0
	in.ledger.Cancels++
	in.ledger.Movements++
	d.emit("payment_intent.canceled", in.snapshot())
	return jsonAnswer(in)
}

func (d *Double) createRefund(f url.Values) answer {
	in := d.intents[f.Get("payment_intent")]
	if in == nil {
		return d.missing("payment_intent", f.Get("payment_intent"))
	}
	if in.Status != "succeeded" {
		return answerError(400, "invalid_request_error", "charge_not_refundable",
			"This PaymentIntent does not have a successful charge to refund.", "payment_intent")
	}
	left := in.Received - d.refundedOrPending(in.ID)
	amount := left
	if v := f.Get("amount"); v != "" {
		amount, _ = strconv.ParseInt(v, 10, 64)
	}
	if left == 0 {
		return answerError(400, "invalid_request_error", "charge_already_refunded",
			"Charge has already been refunded.", "payment_intent")
	}
	if amount > left {
		return answerError(400, "invalid_request_error", "amount_too_large",
			"Refund amount is greater than unrefunded amount on charge", "amount")
	}
	re := &refund{ID: d.nextID("re"), Object: "refund", Amount: amount, Currency: in.Currency,
		PaymentIntent: in.ID, Status: "succeeded", Metadata: metadata(f), Created: d.clock().Unix()}
	if in.LatestCharge != nil {
		re.Charge = *in.LatestCharge
	}
	d.refunds[re.ID] = re
	in.ledger.Refunds++
	in.ledger.Movements++
	if d.pending {
		re.Status = "pending"
	} else {
		in.ledger.Refunded += amount
		d.emit("charge.refunded", d.charge(in))
	}
	return jsonAnswer(re)
}

func (d *Double) refundedOrPending(intentID string) int64 {
	var n int64
	for _, re := range d.refunds {
		if re.PaymentIntent == intentID && re.Status != "failed" {
			n += re.Amount
		}
	}
	return n
}

func (d *Double) refundsOf(intentID string) []*refund {
	var out []*refund
	for _, re := range d.refunds {
		if re.PaymentIntent == intentID {
			c := *re
			out = append(out, &c)
		}
	}
	// Newest first, as Stripe lists.
	slices.SortFunc(out, func(a, b *refund) int { return strings.Compare(b.ID, a.ID) })
	return out
}

// charge is the Charge object a charge.refunded event carries.
func (d *Double) charge(in *intent) map[string]any {
	var refunded int64
	for _, re := range d.refundsOf(in.ID) {
		if re.Status == "succeeded" {
			refunded += re.Amount
		}
	}
	id := ""
	if in.LatestCharge != nil {
		id = *in.LatestCharge
	}
	return map[string]any{"id": id, "object": "charge", "payment_intent": in.ID, "amount": in.Amount,
		"amount_captured": in.Received, "amount_refunded": refunded, "refunded": refunded == in.Received,
		"currency": in.Currency, "refunds": map[string]any{"object": "list", "data": d.refundsOf(in.ID), "has_more": false}}
}

func (in *intent) snapshot() *intent {
	c := *in
	c.Metadata = maps(in.Metadata)
	return &c
}

func maps(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// searchQuery is the one query the double understands, with the search
// language's backslash escapes in the quoted value.
var searchQuery = regexp.MustCompile(`^metadata\['cmpay_payment_id'\]:'((?:[^'\\]|\\.)*)'$`)

var unescape = regexp.MustCompile(`\\(.)`)

// read answers a GET; it takes d.mu itself.
func (d *Double) read(ep Endpoint, id string, f url.Values) answer {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch ep {
	case GetPaymentIntent:
		if in := d.intents[id]; in != nil {
			return jsonAnswer(in)
		}
		return d.missing("payment_intent", id)
	case SearchPaymentIntents:
		m := searchQuery.FindStringSubmatch(f.Get("query"))
		if m == nil {
			return answerError(400, "invalid_request_error", "parameter_invalid", "unsupported search query", "query")
		}
		data := []*intent{}
		cutoff := d.clock().Add(-d.searchLag)
		for i := len(d.order) - 1; i >= 0; i-- {
			in := d.intents[d.order[i]]
			if in.Metadata["cmpay_payment_id"] == unescape.ReplaceAllString(m[1], "$1") && !in.created.After(cutoff) {
				data = append(data, in)
			}
		}
		return jsonAnswer(map[string]any{"object": "search_result", "data": data, "has_more": false,
			"next_page": nil, "url": "/v1/payment_intents/search"})
	case ListPaymentIntents:
		return d.listIntents(f)
	case GetRefund:
		if re := d.refunds[id]; re != nil {
			return jsonAnswer(re)
		}
		return d.missing("refund", id)
	case ListRefunds:
		return d.listRefunds(f)
	}
	panic("not a read: " + string(ep))
}

// Ledger is the money the intent moved (zero for an unknown id).
func (d *Double) Ledger(intentID string) Ledger {
	d.mu.Lock()
	defer d.mu.Unlock()
	if in := d.intents[intentID]; in != nil {
		return in.ledger
	}
	return Ledger{}
}

// IntentsFor lists the intents made for a CMPay payment id, oldest first.
func (d *Double) IntentsFor(paymentID string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, id := range d.order {
		if d.intents[id].Metadata["cmpay_payment_id"] == paymentID {
			out = append(out, id)
		}
	}
	return out
}

// RefundsFor lists the refunds made for a CMPay refund id.
func (d *Double) RefundsFor(refundID string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for id, re := range d.refunds {
		if re.Metadata["cmpay_refund_id"] == refundID {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Status is an intent's status, "" for an unknown id.
func (d *Double) Status(intentID string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if in := d.intents[intentID]; in != nil {
		return in.Status
	}
	return ""
}

// Pay is the payer paying a Pix or boleto intent that requires action.
func (d *Double) Pay(intentID string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	in := d.intents[intentID]
	if in == nil || in.Status != "requires_action" {
		return fmt.Errorf("stripedouble: intent %q is not waiting for the payer", intentID)
	}
	in.NextAction = nil
	d.authorize(in)
	return nil
}

// Expire lets a Pix or boleto intent's payment attempt expire, as Stripe
// does: back to requires_payment_method with the attempt's error.
func (d *Double) Expire(intentID string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	in := d.intents[intentID]
	if in == nil || in.Status != "requires_action" {
		return fmt.Errorf("stripedouble: intent %q is not waiting for the payer", intentID)
	}
	in.Status, in.NextAction = "requires_payment_method", nil
	in.LastError = &stripeError{Type: "invalid_request_error", Code: "payment_intent_payment_attempt_expired",
		Message: "The payment attempt expired."}
	d.emit("payment_intent.payment_failed", in.snapshot())
	return nil
}

// ExpireAuthorization cancels an uncaptured intent as Stripe does by itself
// when its authorization lapses (7 days for cards): canceled with
// cancellation_reason "automatic", the hold released, and
// payment_intent.canceled recorded, which reaches CMPay only if a test
// posts it (a lost event is one it does not).
func (d *Double) ExpireAuthorization(intentID string) error {
	return d.actOnAuthorization(intentID, func(in *intent) answer { return d.cancel(in.ID, "automatic") })
}

// CaptureFromDashboard captures amount (0: all of it) of an uncaptured
// intent as staff do in Stripe's dashboard, with no request of CMPay's:
// payment_intent.succeeded is recorded, and reaches CMPay only if a test
// posts it.
func (d *Double) CaptureFromDashboard(intentID string, amount int64) error {
	return d.actOnAuthorization(intentID, func(in *intent) answer {
		f := url.Values{}
		if amount > 0 {
			f.Set("amount_to_capture", strconv.FormatInt(amount, 10))
		}
		return d.capture(in.ID, f)
	})
}

// actOnAuthorization runs act, under d.mu, on intent id when it waits for
// a capture, and says why not otherwise.
func (d *Double) actOnAuthorization(id string, act func(*intent) answer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	in := d.intents[id]
	if in == nil || in.Status != "requires_capture" {
		return fmt.Errorf("stripedouble: intent %q is not waiting for a capture", id)
	}
	if a := act(in); a.status != http.StatusOK {
		return fmt.Errorf("stripedouble: intent %q: %s", id, a.body)
	}
	return nil
}

// SettleRefund ends a pending refund: succeeded, or failed with a code.
func (d *Double) SettleRefund(refundID string, succeeded bool, failureCode string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	re := d.refunds[refundID]
	if re == nil || re.Status != "pending" {
		return fmt.Errorf("stripedouble: refund %q is not pending", refundID)
	}
	in := d.intents[re.PaymentIntent]
	if succeeded {
		re.Status = "succeeded"
		in.ledger.Refunded += re.Amount
	} else {
		re.Status, re.FailureReason = "failed", &failureCode
	}
	c := *re
	d.emit("refund.updated", &c)
	if succeeded {
		d.emit("charge.refunded", d.charge(in))
	}
	return nil
}

// FailRefund fails a refund that had succeeded, as Stripe does when the
// payer's bank returns it (a closed card or account): the money goes back
// to the merchant's balance, the refund becomes failed, and refund.updated
// and charge.refund.updated are sent.
func (d *Double) FailRefund(refundID, failureCode string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	re := d.refunds[refundID]
	if re == nil || re.Status != "succeeded" {
		return fmt.Errorf("stripedouble: refund %q has not succeeded", refundID)
	}
	in := d.intents[re.PaymentIntent]
	re.Status, re.FailureReason = "failed", &failureCode
	in.ledger.Refunded -= re.Amount
	c := *re
	d.emit("refund.updated", &c)
	d.emit("charge.refund.updated", &c)
	return nil
}

// listIntents answers GET /v1/payment_intents as Stripe's lists do, and
// unlike its search: consistent (every intent made before is there), newest
// first, filtered by created (created, or created[gt|gte|lt|lte], Unix
// seconds), a page of limit (1 to 100, default 10) after starting_after;
// d.mu is held.
func (d *Double) listIntents(f url.Values) answer {
	limit, ok := pageLimit(f)
	if !ok {
		return badLimit()
	}
	var bounds [5]*int64 // created, gt, gte, lt, lte
	for i, name := range []string{"created", "created[gt]", "created[gte]", "created[lt]", "created[lte]"} {
		if v := f.Get(name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return answerError(400, "invalid_request_error", "parameter_invalid", "bad "+name, name)
			}
			bounds[i] = &n
		}
	}
	in := func(c int64) bool {
		return (bounds[0] == nil || c == *bounds[0]) && (bounds[1] == nil || c > *bounds[1]) &&
			(bounds[2] == nil || c >= *bounds[2]) && (bounds[3] == nil || c < *bounds[3]) && (bounds[4] == nil || c <= *bounds[4])
	}
	after := f.Get("starting_after")
	if after != "" && d.intents[after] == nil {
		return d.missing("payment_intent", after)
	}
	data := []*intent{}
	more := false
	started := after == ""
	for i := len(d.order) - 1; i >= 0; i-- {
		it := d.intents[d.order[i]]
		if !started {
			started = it.ID == after
			continue
		}
		if !in(it.Created) {
			continue
		}
		if len(data) == limit {
			more = true
			break
		}
		data = append(data, it)
	}
	return jsonAnswer(map[string]any{"object": "list", "data": data, "has_more": more, "url": "/v1/payment_intents"})
}

// pageLimit is a list's page size: limit, 1 to 100, default 10; not ok
// for anything else.
func pageLimit(f url.Values) (int, bool) {
	v := f.Get("limit")
	if v == "" {
		return 10, true
	}
	n, err := strconv.Atoi(v)
	return n, err == nil && n >= 1 && n <= 100
}

func badLimit() answer {
	return answerError(400, "invalid_request_error", "parameter_invalid", "limit must be 1 to 100", "limit")
}

// listRefunds answers GET /v1/refunds?payment_intent=…: the intent's
// refunds, newest first, a page of limit after starting_after, as Stripe
// pages its lists; d.mu is held.
func (d *Double) listRefunds(f url.Values) answer {
	pi := f.Get("payment_intent")
	if d.intents[pi] == nil {
		return d.missing("payment_intent", pi)
	}
	limit, ok := pageLimit(f)
	if !ok {
		return badLimit()
	}
	all := d.refundsOf(pi)
	if after := f.Get("starting_after"); after != "" {
		i := slices.IndexFunc(all, func(re *refund) bool { return re.ID == after })
		if i < 0 {
			return d.missing("refund", after)
		}
		all = all[i+1:]
	}
	data, more := all, false
	if len(all) > limit {
		data, more = all[:limit], true
	}
	return jsonAnswer(map[string]any{"object": "list", "data": data, "has_more": more, "url": "/v1/refunds"})
}

package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/restjson"
)

// The REST endpoints: the same domain calls as the GraphQL mutations, so a
// key used on one transport replays on the other. A request that applies
// answers 201 (a create, a refund) or 200 (a capture, a cancel); a replay
// 200 with the same resource and Idempotent-Replayed: true; an operation
// whose outcome at the processor is not known yet 202 with the same body
// (createAnswer, changeAnswer); errors, a decline included, are RFC 9457 problems
// (writeProblem).

// restPayment is a payment as the REST endpoints show it, and restRefund a
// refund: package restjson holds the one definition, which webhook
// deliveries share.
type (
	restPayment = restjson.Payment
	restRefund  = restjson.Refund
)

// restRefundAnswer is what POST …/refunds answers: the refund, and the
// payment as it is after it.
type restRefundAnswer struct {
	restRefund
	Payment restPayment `json:"payment"`
}

func restRefundOf(r payments.Refund) restRefund { return restjson.RefundOf(r) }

// restPaymentOf shows p with its refunds, read only when it may have any:
// a payment that captured nothing has none, and neither has one that fresh
// says this request has just created, captured or canceled (the hot path
// of a create skips the read).
func restPaymentOf(ctx context.Context, svc *payments.Service, p payments.Payment, fresh bool) (restPayment, error) {
	var refunds []payments.Refund
	if p.Captured.Minor != 0 && !fresh {
		var err error
		if refunds, err = svc.Refunds(ctx, p); err != nil {
			return restPayment{}, err
		}
	}
	// A Pix or boleto paid later: its next action and times live beside
	// the payment's row (payments.AsyncStateOf).
	async, err := svc.AsyncStatesOf(ctx, []payments.Payment{p})
	if err != nil {
		return restPayment{}, err
	}
	p.NextAction, p.PaidAt, p.ExpiredAt = async[0].NextAction, async[0].PaidAt, async[0].ExpiredAt
	return restjson.PaymentOf(p, refunds), nil
}

// restCreateBody is the JSON body of POST /api/payments. Amount is kept raw:
// a string ("10.50") or a number (10.50), read from its digits.
type restCreateBody struct {
	ClientID string          `json:"clientId"`
	Amount   json.RawMessage `json:"amount"`
	Currency string          `json:"currency"`
	Method   string          `json:"method"`
	Capture  *bool           `json:"capture"`
	// PaymentMethodToken is the payment method at the processor (Stripe:
	// pm_…); part of the payload the key is bound to.
	PaymentMethodToken *string `json:"paymentMethodToken"`
}

// restCaptureBody is the optional JSON body of a capture.
type restCaptureBody struct {
	Amount json.RawMessage `json:"amount"`
}

// restCancelBody is a cancel's body: none, or an empty object.
type restCancelBody struct{}

// restRefundBody is the optional JSON body of a refund.
type restRefundBody struct {
	Amount json.RawMessage `json:"amount"`
	Reason *string         `json:"reason"`
}

// createPaymentREST is POST /api/payments.
func createPaymentREST(svc *payments.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		metrics.SetOperation(r.Context(), "rest:createPayment")
		key, ok := idempotencyKey(w, r)
		if !ok {
			return
		}
		var body restCreateBody
		if err := decodeJSONBody(r, &body, false); err != nil {
			writeProblem(w, r, bodyProblem(err))
			return
		}
		res, err := svc.Create(r.Context(), payments.CreateRequest{
			ClientID:           body.ClientID,
			Amount:             amountText(body.Amount),
			Currency:           body.Currency,
			Method:             payments.Method(body.Method),
			Capture:            body.Capture,
			PaymentMethodToken: body.PaymentMethodToken,
			IdempotencyKey:     key,
			Origin:             restOrigin(r),
		})
		if err != nil {
			err = hintMethod(err, body.Method)
			writeProblem(w, r, apierror.FromDomain(r.Context(), err))
			return
		}
		writeCreated(w, r, svc, res)
	}
}

// writeCreated answers a create the engine did not refuse (createAnswer).
func writeCreated(w http.ResponseWriter, r *http.Request, svc *payments.Service, res payments.CreateResult) {
	w.Header().Set("Location", "/api/payments/"+res.Payment.ID)
	a := createAnswer(res)
	if a.replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if a.problem != nil {
		writeProblem(w, r, *a.problem)
		return
	}
	writePayment(w, r, svc, res.Payment, a.status, !res.Replayed)
}

// capturePaymentREST is POST /api/payments/{id}/capture, body optional:
// {"amount": "…"}.
func capturePaymentREST(svc *payments.Service) http.HandlerFunc {
	return changeREST(svc, "rest:capturePayment", func(ctx context.Context, id, key string, body restCaptureBody, o payments.Origin) (payments.ChangeResult, error) {
		return svc.Capture(ctx, payments.CaptureRequest{PaymentID: id, Amount: optionalAmount(body.Amount), IdempotencyKey: key, Origin: o})
	})
}

// cancelPaymentREST is POST /api/payments/{id}/cancel, no body.
func cancelPaymentREST(svc *payments.Service) http.HandlerFunc {
	return changeREST(svc, "rest:cancelPayment", func(ctx context.Context, id, key string, _ restCancelBody, o payments.Origin) (payments.ChangeResult, error) {
		return svc.Cancel(ctx, payments.CancelRequest{PaymentID: id, IdempotencyKey: key, Origin: o})
	})
}

// refundPaymentREST is POST /api/payments/{id}/refunds, body optional:
// {"amount": "…", "reason": "…"}. 201 with the refund and a Location.
func refundPaymentREST(svc *payments.Service) http.HandlerFunc {
	return changeREST(svc, "rest:refundPayment", func(ctx context.Context, id, key string, body restRefundBody, o payments.Origin) (payments.ChangeResult, error) {
		return svc.Refund(ctx, payments.RefundRequest{PaymentID: id, Amount: optionalAmount(body.Amount), Reason: body.Reason,
			IdempotencyKey: key, Origin: o})
	})
}

// changeREST is the handler shared by capture, cancel and refunds: the key
// header, the optional body (each route's own type B, so that a field is
// refused, and the fields taken named, by the route's own list), the call,
// the answer.
func changeREST[B any](svc *payments.Service, operation string,
	call func(ctx context.Context, id, key string, body B, o payments.Origin) (payments.ChangeResult, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		metrics.SetOperation(r.Context(), operation)
		key, ok := idempotencyKey(w, r)
		if !ok {
			return
		}
		var body B
		if err := decodeJSONBody(r, &body, true); err != nil {
			writeProblem(w, r, bodyProblem(err))
			return
		}
		res, err := call(r.Context(), chi.URLParam(r, "id"), key, body, restOrigin(r))
		if err != nil {
			// A refusal answered again to its key is a replay, as a
			// decline's is (createAnswer).
			if payments.IsReplayedRefusal(err) {
				w.Header().Set("Idempotent-Replayed", "true")
			}
			writeProblem(w, r, apierror.FromDomain(r.Context(), err))
			return
		}
		writeChanged(w, r, svc, res)
	}
}

// writeChanged answers a capture, cancel or refund the engine did not
// refuse (changeAnswer).
func writeChanged(w http.ResponseWriter, r *http.Request, svc *payments.Service, res payments.ChangeResult) {
	a := changeAnswer(res)
	if a.replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if a.problem != nil {
		writeProblem(w, r, *a.problem)
		return
	}
	if res.Refund == nil {
		writePayment(w, r, svc, res.Payment, a.status, !res.Replayed)
		return
	}
	p, err := restPaymentOf(r.Context(), svc, res.Payment, false)
	if err != nil {
		writeProblem(w, r, apierror.FromInternal(r.Context(), err))
		return
	}
	w.Header().Set("Location", "/api/payments/"+res.Payment.ID+"/refunds/"+res.Refund.ID)
	writeJSON(w, a.status, restRefundAnswer{restRefund: restRefundOf(*res.Refund), Payment: p})
}

// restAnswer is how a REST operation answers a result the engine gave: a
// status for the resource, or a problem; and whether it is a replay
// (Idempotent-Replayed: true, whatever the status).
type restAnswer struct {
	status   int
	problem  *apierror.Error
	replayed bool
}

// createAnswer answers a create: 201 (200 on a replay) once the processor
// has created the payment; 202 while its answer is not known (PROCESSING),
// on a replay too, since the client still has to look again; a 402
// PAYMENT_DECLINED problem for a payment the processor declined.
func createAnswer(res payments.CreateResult) restAnswer {
	a := restAnswer{status: http.StatusCreated, replayed: res.Replayed}
	switch {
	case res.Payment.Status == payments.StatusDeclined:
		e := apierror.Declined(res.Payment)
		a.problem = &e
	case unresolved(res.Payment):
		a.status = http.StatusAccepted
	case res.Replayed:
		a.status = http.StatusOK
	}
	return a
}

// changeAnswer answers a capture or cancel (200) or a refund (201), 200 on
// a replay; 202 while the processor's answer is not known (a pending
// capture or cancel, a PROCESSING refund); a refund the processor failed is
// the 402 PROCESSOR_REFUSED problem a refusal gets.
func changeAnswer(res payments.ChangeResult) restAnswer {
	a := restAnswer{status: http.StatusOK, replayed: res.Replayed}
	if res.Refund == nil {
		if res.Payment.PendingOperation != "" {
			a.status = http.StatusAccepted
		}
		return a
	}
	switch {
	case res.Refund.Status == payments.RefundFailed:
		e := apierror.Refused(&payments.ProcessorRefusedError{
			Operation: payments.OpRefund, PaymentID: res.Payment.ID, Code: res.Refund.FailureCode})
		a.problem = &e
	case res.Refund.Status == payments.RefundProcessing:
		a.status = http.StatusAccepted
	case !res.Replayed:
		a.status = http.StatusCreated
	}
	return a
}

// unresolved reports whether p waits for the processor's answer: created
// without one yet, or with a capture or cancel sent and not answered.
func unresolved(p payments.Payment) bool {
	return p.Status == payments.StatusProcessing || p.PendingOperation != ""
}

// getPaymentREST is GET /api/payments/{id}.
func getPaymentREST(svc *payments.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		metrics.SetOperation(r.Context(), "rest:getPayment")
		p, err := getVisible(r, svc, chi.URLParam(r, "id"))
		if err != nil {
			writeProblem(w, r, apierror.FromDomain(r.Context(), err))
			return
		}
		writePayment(w, r, svc, p, http.StatusOK, false)
	}
}

// getRefundREST is GET /api/payments/{id}/refunds/{refundId}: where a
// refund's Location points.
func getRefundREST(svc *payments.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		metrics.SetOperation(r.Context(), "rest:getRefund")
		p, err := getVisible(r, svc, chi.URLParam(r, "id"))
		if err != nil {
			writeProblem(w, r, apierror.FromDomain(r.Context(), err))
			return
		}
		refunds, err := svc.Refunds(r.Context(), p)
		if err != nil {
			writeProblem(w, r, apierror.FromInternal(r.Context(), err))
			return
		}
		for _, refund := range refunds {
			if refund.ID == chi.URLParam(r, "refundId") {
				writeJSON(w, http.StatusOK, restRefundOf(refund))
				return
			}
		}
		writeProblem(w, r, apierror.Error{Code: apierror.NotFound, Status: http.StatusNotFound, Message: "no such refund"})
	}
}

// writePayment answers with a payment and status (createAnswer,
// changeAnswer); fresh as for restPaymentOf.
func writePayment(w http.ResponseWriter, r *http.Request, svc *payments.Service, p payments.Payment, status int, fresh bool) {
	body, err := restPaymentOf(r.Context(), svc, p, fresh)
	if err != nil {
		writeProblem(w, r, apierror.FromInternal(r.Context(), err))
		return
	}
	writeJSON(w, status, body)
}

// idempotencyKey reads the one Idempotency-Key header a POST must carry.
func idempotencyKey(w http.ResponseWriter, r *http.Request) (string, bool) {
	keys := r.Header.Values("Idempotency-Key")
	if len(keys) != 1 {
		writeProblem(w, r, badInput("idempotencyKey", "send exactly one Idempotency-Key header with the request's idempotency key"))
		return "", false
	}
	return keys[0], true
}

// restOrigin is who sends a REST request: a token bound to a client may
// create and change that client's payments only.
func restOrigin(r *http.Request) payments.Origin {
	return payments.Origin{Transport: "rest", Client: auth.BoundClient(r.Context())}
}

// getVisible reads a payment the request's token may see: another
// client's is not found, for a token bound to a client.
func getVisible(r *http.Request, svc *payments.Service, id string) (payments.Payment, error) {
	p, err := svc.Get(r.Context(), id)
	if err == nil && !auth.Sees(r.Context(), p.ClientID) {
		return payments.Payment{}, fmt.Errorf("payment %q: %w", id, payments.ErrNotFound)
	}
	return p, err
}

// amountText is the amount's decimal text: a JSON string's content, or a
// JSON number's digits exactly as sent.
func amountText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&n) == nil {
		return n.String()
	}
	// null, true, an object: the domain refuses it with a message that
	// shows what was sent.
	return string(raw)
}

// optionalAmount is an optional amount's text: nil when left out or null.
func optionalAmount(raw json.RawMessage) *string {
	if len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	s := amountText(raw)
	return &s
}

func badInput(field, message string) apierror.Error {
	return apierror.Error{Code: apierror.BadUserInput, Status: http.StatusBadRequest, Message: message,
		Details: map[string]any{"field": field, "problems": []map[string]any{{"field": field, "message": message}}}}
}

// retryAfterSeconds is the Retry-After of a 503 answer.
const retryAfterSeconds = "1"

// maxInstanceLen is the longest path a problem repeats as its instance.
const maxInstanceLen = 256

// writeProblem answers with an RFC 9457 problem: the standard members plus
// code and the error's details (field, problems, paymentId,
// differingFields, available, requestId). A detail named like a standard
// member keeps the standard meaning of that name: PAYMENT_STATE_CONFLICT's
// "status" (the payment's, in GraphQL's extensions) is "paymentStatus"
// here, "status" being the HTTP status.
func writeProblem(w http.ResponseWriter, r *http.Request, e apierror.Error) {
	body := map[string]any{
		"type":     "about:blank",
		"title":    http.StatusText(e.Status),
		"status":   e.Status,
		"detail":   e.Message,
		"code":     e.Code,
		"instance": r.URL.Path,
	}
	if len(r.URL.Path) > maxInstanceLen {
		// An error never repeats an over-long input whole, a path
		// included: its start, still a path, cut before an escape.
		p := r.URL.EscapedPath()[:maxInstanceLen]
		if i := strings.LastIndexByte(p, '%'); i >= len(p)-2 {
			p = p[:i]
		}
		body["instance"] = p
	}
	for k, v := range e.Details {
		if _, standard := body[k]; standard {
			k = "payment" + strings.ToUpper(k[:1]) + k[1:]
		}
		body[k] = v
	}
	w.Header().Set("Content-Type", "application/problem+json")
	if e.Status == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
		// The database is down or failing over; a failover takes seconds
		// (docs/operations/high-availability.md), so a second is a fair
		// first wait.
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(body)
}

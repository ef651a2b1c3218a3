package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/payments"
)

// restPayment is a payment as the REST endpoint shows it. It has no
// counters, so the body of a replay is byte for byte the first answer's.
type restPayment struct {
	ID             string `json:"id"`
	ClientID       string `json:"clientId"`
	Amount         string `json:"amount"`
	Currency       string `json:"currency"`
	Method         string `json:"method"`
	IdempotencyKey string `json:"idempotencyKey"`
	CreatedAt      string `json:"createdAt"`
}

func restPaymentOf(p payments.Payment) restPayment {
	return restPayment{
		ID:             p.ID,
		ClientID:       p.ClientID,
		Amount:         p.Amount.String(),
		Currency:       p.Amount.Currency,
		Method:         string(p.Method),
		IdempotencyKey: p.IdempotencyKey,
		CreatedAt:      p.CreatedAt.Format(time.RFC3339Nano),
	}
}

// restCreateBody is the JSON body of POST /api/payments. Amount is kept raw:
// a string ("10.50") or a number (10.50), read from its digits.
type restCreateBody struct {
	ClientID string          `json:"clientId"`
	Amount   json.RawMessage `json:"amount"`
	Currency string          `json:"currency"`
	Method   string          `json:"method"`
}

// createPaymentREST is POST /api/payments: the seed's endpoint, the same
// domain call as the createPayment mutation, so a key used on one transport
// replays on the other. 201 with the payment when created; 200 with the same
// payment and Idempotent-Replayed: true on a replay; errors as RFC 9457
// problems.
func createPaymentREST(svc *payments.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		metrics.SetOperation(r.Context(), "rest:createPayment")
		keys := r.Header.Values("Idempotency-Key")
		if len(keys) != 1 {
			writeProblem(w, r, badInput("idempotencyKey", "send exactly one Idempotency-Key header with the payment's idempotency key"))
			return
		}
		body, err := decodeCreateBody(r)
		if err != nil {
			writeProblem(w, r, bodyProblem(err))
			return
		}
		res, err := svc.Create(r.Context(), payments.CreateRequest{
			ClientID:       body.ClientID,
			Amount:         body.amount(),
			Currency:       body.Currency,
			Method:         payments.Method(body.Method),
			IdempotencyKey: keys[0],
			Transport:      "rest",
		})
		if err != nil {
			writeProblem(w, r, apierror.FromDomain(r.Context(), err))
			return
		}
		status := http.StatusCreated
		if res.Replayed {
			status = http.StatusOK
			w.Header().Set("Idempotent-Replayed", "true")
		}
		w.Header().Set("Location", "/api/payments/"+res.Payment.ID)
		writeJSON(w, status, restPaymentOf(res.Payment))
	}
}

// getPaymentREST is GET /api/payments/{id}.
func getPaymentREST(svc *payments.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		metrics.SetOperation(r.Context(), "rest:getPayment")
		p, err := svc.Get(r.Context(), chi.URLParam(r, "id"))
		if err != nil {
			writeProblem(w, r, apierror.FromDomain(r.Context(), err))
			return
		}
		writeJSON(w, http.StatusOK, restPaymentOf(p))
	}
}

// decodeCreateBody reads exactly one JSON object with known fields only, as
// decodeJSONBody does: a misspelt "amuont" is an error, not a payment
// without an amount.
func decodeCreateBody(r *http.Request) (restCreateBody, error) {
	var body restCreateBody
	return body, decodeJSONBody(r, &body, false)
}

// amount is the amount's decimal text: a JSON string's content, or a JSON
// number's digits exactly as sent.
func (b restCreateBody) amount() string {
	raw := bytes.TrimSpace(b.Amount)
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

func badInput(field, message string) apierror.Error {
	return apierror.Error{Code: apierror.BadUserInput, Status: http.StatusBadRequest, Message: message,
		Details: map[string]any{"field": field, "problems": []map[string]any{{"field": field, "message": message}}}}
}

// writeProblem answers with an RFC 9457 problem: the standard members plus
// code and the error's details (field, problems, paymentId,
// differingFields, requestId).
func writeProblem(w http.ResponseWriter, r *http.Request, e apierror.Error) {
	body := map[string]any{
		"type":     "about:blank",
		"title":    http.StatusText(e.Status),
		"status":   e.Status,
		"detail":   e.Message,
		"code":     e.Code,
		"instance": r.URL.Path,
	}
	for k, v := range e.Details {
		body[k] = v
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(body)
}

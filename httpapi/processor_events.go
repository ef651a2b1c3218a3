package httpapi

import (
	"errors"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/intake"
	"github.com/cmpay/cmpay/metrics"
	"github.com/cmpay/cmpay/payments"
)

// processorEvents answers POST /processor/stripe/events: Stripe posts its
// events here, signed with the endpoint's whsec_ secret, which is the only
// credential. 200 once the event is stored (a repeat too); 400, changing
// nothing, for anything that does not verify.
func processorEvents(in *intake.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		payload, err := io.ReadAll(r.Body)
		if err != nil {
			writeProblem(w, r, bodyProblem(err))
			return
		}
		ev, err := in.Receive(r.Context(), payload, r.Header.Get("Stripe-Signature"))
		switch {
		case errors.Is(err, intake.ErrRefused):
			writeProblem(w, r, apierror.Error{Code: apierror.BadRequest, Status: http.StatusBadRequest, Message: err.Error()})
			return
		case err != nil:
			writeProblem(w, r, apierror.FromDomain(r.Context(), err))
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"received": true, "id": ev.ID})
	}
}

// paySandboxREST is POST /sandbox/payments/{id}/pay: the sandbox's payer
// pays a PENDING Pix or boleto, which is then CAPTURED (200 and the
// payment); PAYMENT_STATE_CONFLICT when it is not PENDING.
func paySandboxREST(svc *payments.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		metrics.SetOperation(r.Context(), "rest:paySandbox")
		p, err := getVisible(r, svc, chi.URLParam(r, "id"))
		if err == nil {
			p, err = svc.PaySandbox(r.Context(), p.ID)
		}
		if err != nil {
			writeProblem(w, r, apierror.FromDomain(r.Context(), err))
			return
		}
		writePayment(w, r, svc, p, http.StatusOK, true)
	}
}

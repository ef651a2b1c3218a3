package httpapi

import (
	"errors"
	"io"
	"net/http"

	"github.com/cmpay/cmpay/apierror"
	"github.com/cmpay/cmpay/intake"
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

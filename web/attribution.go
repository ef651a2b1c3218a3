package web

import (
	"github.com/cmpay/cmpay/payments"
)

// keyUse is every repeat of one idempotency key for one operation by one
// party: the client through an API, or one staff member through the admin.
// A payment's replay and rejection counts cover all its keys and
// operations together; support staff need to know whose retry of which
// request it was before they tell a customer anything.
type keyUse struct {
	Operation payments.Operation
	Key       string
	Transport string // graphql, rest or admin
	Actor     string // the staff member, for the admin
	Replayed  int
	Rejected  int
}

// ByStaff reports whether a staff member made these requests in the admin.
func (u keyUse) ByStaff() bool { return u.Transport == "admin" }

// keyUses groups a payment's replayed and rejected attempts by operation,
// key and party, in the order each group first appears in the timeline.
func keyUses(attempts []attemptView) []keyUse {
	var uses []keyUse
	index := map[keyUse]int{}
	for _, a := range attempts {
		if a.Outcome != payments.OutcomeReplayed && a.Outcome != payments.OutcomeRejected {
			continue
		}
		id := keyUse{Operation: a.Operation, Key: a.IdempotencyKey, Transport: a.Transport, Actor: a.Actor}
		i, ok := index[id]
		if !ok {
			i = len(uses)
			index[id] = i
			uses = append(uses, id)
		}
		if a.Outcome == payments.OutcomeReplayed {
			uses[i].Replayed++
		} else {
			uses[i].Rejected++
		}
	}
	return uses
}

// who names the party behind a keyUse in a sentence: "the client (REST)",
// "staff member ana".
func (u keyUse) who() string {
	if u.ByStaff() {
		if u.Actor == "" {
			return "a staff member"
		}
		return "staff member " + u.Actor
	}
	switch u.Transport {
	case "rest":
		return "the client (REST API)"
	case "graphql":
		return "the client (GraphQL API)"
	}
	return "the client"
}

// what names the request a key was for: "the create request",
// "the refund form".
func (u keyUse) what() string {
	if u.ByStaff() {
		return "the " + operationName(u.Operation) + " form"
	}
	return "the " + operationName(u.Operation) + " request"
}

// undone says what a replay did not do again, in the operation's words,
// and for a create by what came of p: a payment never charged (declined,
// expired, waiting, authorized only) was not "charged again".
func (u keyUse) undone(p payments.Payment) string {
	switch u.Operation {
	case payments.OpCreate:
		if p.Captured.Minor > 0 {
			return "nothing was charged again"
		}
		return "no second payment was made"
	case payments.OpCapture:
		return "nothing was captured again"
	case payments.OpRefund:
		return "nothing was refunded again"
	case payments.OpCancel:
		return "nothing was canceled again"
	}
	return "nothing was done again"
}

// capital starts s with a capital letter.
func capital(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// reasonText is " (reason)" for a request that gave a reason, else "":
// glued to the words before it, so no space comes before the full stop.
func reasonText(params payments.Params) string {
	if reason, ok := params[payments.FieldReason]; ok {
		return " (" + reason + ")"
	}
	return ""
}

// askedFor is " (asked for AMOUNT)", or "" when the request named none.
func askedFor(amount string) string {
	if amount == "" {
		return ""
	}
	return " (asked for " + amount + ")"
}

// createdText is the timeline's line for the request that created p,
// worded from what the processor made of it: support staff read it
// literally, so a declined card or a payment still waiting for the
// processor must not read as captured. A create the processor did not
// answer in time was answered PROCESSING (202): the line says so, and what
// the payment became once the processor answered. Authorize-only comes
// before Pix and boleto: only the synchronous sandbox authorizes those (a
// processor that leaves them to the payer refuses capture: false), and
// pays them on create when captured, which must not read as left to the
// payer.
func createdText(v paymentView, params payments.Params) string {
	p := v.Payment
	if answeredProcessing(p, v.ProcessorCalls) && p.Status != payments.StatusProcessing {
		const answered = "Created this payment; answered PROCESSING"
		switch {
		case p.Status == payments.StatusDeclined && p.DeclineCode == payments.DeclineNotCreated:
			return answered + "; the processor never made it (" + p.DeclineCode + "): no money moved."
		case p.Status == payments.StatusDeclined:
			return answered + "; the processor declined it later" + codeText(p.DeclineCode) + ": no money moved."
		case params[payments.FieldCapture] == "false":
			return answered + "; authorized later."
		case leftToPayer(v):
			return answered + "; created later for the payer to pay by " + methodWord(p.Method) + "."
		}
		return answered + "; captured later."
	}
	switch {
	case p.Status == payments.StatusDeclined && p.DeclineCode != "":
		return "Created this payment; the processor declined it (" + p.DeclineCode + "): no money moved."
	case p.Status == payments.StatusDeclined:
		return "Created this payment; the processor declined it: no money moved."
	case p.Status == payments.StatusProcessing:
		return "Created this payment; answered PROCESSING: waiting for the processor's answer."
	case params[payments.FieldCapture] == "false":
		return "Created this payment, authorized only."
	case leftToPayer(v):
		return "Created this payment for the payer to pay by " + methodWord(p.Method) + "."
	case paidLater(p):
		return "Created this payment, paid by " + methodWord(p.Method) + " at once."
	}
	return "Created this payment, captured."
}

// leftToPayer says whether v's payment is a Pix or boleto created for its
// payer to pay: one waiting or expired, or one that was given a next
// action (kept once paid). The synchronous sandbox gives none.
func leftToPayer(v paymentView) bool {
	p := v.Payment
	return paidLater(p) && (p.Status == payments.StatusPending || p.Status == payments.StatusExpired ||
		v.Async.NextAction != nil || p.NextAction != nil)
}

// answeredProcessing says whether the create's first call to the processor
// (calls oldest first; none is made before p is stored) settled nothing:
// the client was then answered PROCESSING, whatever p became later.
func answeredProcessing(p payments.Payment, calls []payments.ProcessorCall) bool {
	for _, c := range calls {
		if c.Operation == payments.OpCreate && !c.At.Before(p.CreatedAt) {
			return c.Outcome == payments.CallUnknown || c.Outcome == payments.CallError
		}
	}
	return false
}

// codeText is " (code)", or "" when the processor gave none.
func codeText(code string) string {
	if code == "" {
		return ""
	}
	return " (" + code + ")"
}

// methodWord names an asynchronous method in a sentence.
func methodWord(m payments.Method) string {
	if m == payments.MethodBoleto {
		return "boleto"
	}
	return "Pix"
}

// lookalikeCount is "1 other payment", "3 other payments", or, when the
// list stopped before the last, "19 or more other payments".
func lookalikeCount(v paymentView) string {
	if v.MoreLookalikes {
		return itoa(len(v.Lookalikes)) + " or more other payments"
	}
	return plural(len(v.Lookalikes), "other payment", "other payments")
}

package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
)

// changed is what a capture, cancel or refund answered, on either
// transport, in one shape the contract's table can be checked against.
type changed struct {
	httpStatus int    // REST only
	code       string // the error code, "" on success
	ext        map[string]any
	replayed   bool
	payment    struct {
		ID, Status, CapturedAmount, RefundedAmount string
		Refunds                                    []struct{ ID, Amount string }
	}
	refundID, refundAmount string
	location               string // REST only
}

// lifecycleTransport sends the three operations over one API.
type lifecycleTransport struct {
	name string
	send func(t *testing.T, b *bundle, op, paymentID, key string, args map[string]any) changed
}

const changeFields = `replayed payment { id status capturedAmount refundedAmount refunds { id amount } }`

var graphqlLifecycle = lifecycleTransport{"graphql", func(t *testing.T, b *bundle, op, paymentID, key string, args map[string]any) changed {
	t.Helper()
	decl, pass := "$id: ID!, $key: String!", "paymentId: $id, idempotencyKey: $key"
	vars := map[string]any{"id": paymentID, "key": key}
	for name, v := range args {
		typ := "Decimal"
		if name == "reason" {
			typ = "String"
		}
		decl += fmt.Sprintf(", $%s: %s", name, typ)
		pass += fmt.Sprintf(", %s: $%s", name, name)
		vars[name] = v
	}
	fields := changeFields
	if op == "refundPayment" {
		fields += " refund { id amount }"
	}
	res := b.gql(t, fmt.Sprintf("mutation(%s) { %s(%s) { %s } }", decl, op, pass, fields), vars)
	var out changed
	if len(res.Errors) > 0 {
		out.code, out.ext = res.code(), res.Errors[0].Extensions
		if string(res.Data[op]) != "null" {
			t.Errorf("%s failed with %s but its payload is %s, want null", op, out.code, res.Data[op])
		}
		return out
	}
	var payload struct {
		Replayed bool
		Payment  json.RawMessage
		Refund   *struct{ ID, Amount string }
	}
	if err := json.Unmarshal(res.Data[op], &payload); err != nil {
		t.Fatal(err)
	}
	out.replayed = payload.Replayed
	if err := json.Unmarshal(payload.Payment, &out.payment); err != nil {
		t.Fatal(err)
	}
	if payload.Refund != nil {
		out.refundID, out.refundAmount = payload.Refund.ID, payload.Refund.Amount
	}
	return out
}}

var restLifecycle = lifecycleTransport{"rest", func(t *testing.T, b *bundle, op, paymentID, key string, args map[string]any) changed {
	t.Helper()
	path := map[string]string{"capturePayment": "/capture", "cancelPayment": "/cancel", "refundPayment": "/refunds"}[op]
	body := ""
	if len(args) > 0 {
		raw, _ := json.Marshal(args)
		body = string(raw)
	}
	res, raw := b.raw(t, "POST", "/api/payments/"+paymentID+path, restHeaders(key), body)
	out := changed{httpStatus: res.StatusCode, location: res.Header.Get("Location"), replayed: res.Header.Get("Idempotent-Replayed") == "true"}
	if res.StatusCode >= 400 {
		p := decodeProblem(t, res, raw)
		out.code = p.Code
		_ = json.Unmarshal(raw, &out.ext)
		return out
	}
	if op == "refundPayment" {
		var r struct {
			ID, Amount string
			Payment    json.RawMessage
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		out.refundID, out.refundAmount = r.ID, r.Amount
		raw = r.Payment
	}
	if err := json.Unmarshal(raw, &out.payment); err != nil {
		t.Fatal(err)
	}
	return out
}}

// TestLifecycleOverHTTP runs each row of the contract's lifecycle table,
// for each operation, on both transports and both databases.
func TestLifecycleOverHTTP(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		for _, tr := range []lifecycleTransport{graphqlLifecycle, restLifecycle} {
			t.Run(tr.name, func(t *testing.T) {
				on := func(t *testing.T) *lifecycleRows { return &lifecycleRows{t: t, b: b, tr: tr} }
				t.Run("capture", func(t *testing.T) { on(t).capture() })
				t.Run("cancel", func(t *testing.T) { on(t).cancel() })
				t.Run("refund", func(t *testing.T) { on(t).refund() })
				t.Run("unknown payments", func(t *testing.T) {
					l := on(t)
					for _, op := range []string{"capturePayment", "cancelPayment", "refundPayment"} {
						l.wantError(l.send(op, "pay_unknown", l.k("x"), nil), "NOT_FOUND", 404)
					}
				})
			})
		}
	})
}

// lifecycleRows runs the lifecycle table's rows over one transport.
type lifecycleRows struct {
	t  *testing.T
	b  *bundle
	tr lifecycleTransport
}

func (l *lifecycleRows) send(op, id, key string, args map[string]any) changed {
	l.t.Helper()
	return l.tr.send(l.t, l.b, op, id, key, args)
}

func (l *lifecycleRows) wantError(c changed, code string, restStatus int) {
	l.t.Helper()
	if c.code != code || (l.tr.name == "rest" && c.httpStatus != restStatus) {
		l.t.Fatalf("got code %q (HTTP %d), want %s (HTTP %d for REST)", c.code, c.httpStatus, code, restStatus)
	}
}

// authorize creates a payment authorized, not captured.
func (l *lifecycleRows) authorize(key string) string {
	in := input("shop-"+l.tr.name, "10.50", "BRL", "CREDIT_CARD")
	in["capture"] = false
	return l.b.create(l.t, key, in).Payment.ID
}

// k is a key of this transport's own.
func (l *lifecycleRows) k(s string) string { return l.tr.name + "-" + s }

// statusKey names the payment's status in an error: GraphQL's
// extensions.status; REST's problem keeps "status" for the HTTP status,
// and names the payment's paymentStatus.
func (l *lifecycleRows) statusKey() string {
	return map[string]string{"graphql": "status", "rest": "paymentStatus"}[l.tr.name]
}

// capture: applied, replayed, refused by amount then status, its key
// reused.
func (l *lifecycleRows) capture() {
	t, k := l.t, l.k
	auth := l.authorize(k("auth-1"))
	over := l.send("capturePayment", auth, k("cap-1"), map[string]any{"amount": "10.51"})
	l.wantError(over, "AMOUNT_EXCEEDS_AVAILABLE", 422)
	if over.ext["available"] != "10.50" {
		t.Errorf("available = %v, want 10.50", over.ext["available"])
	}
	capt := l.send("capturePayment", auth, k("cap-1"), map[string]any{"amount": "10"}) // the key stayed unused
	if capt.code != "" || capt.replayed || capt.payment.Status != "CAPTURED" || capt.payment.CapturedAmount != "10.00" ||
		(l.tr.name == "rest" && capt.httpStatus != 200) {
		t.Fatalf("capture: %+v", capt)
	}
	again := l.send("capturePayment", auth, k("cap-1"), map[string]any{"amount": "10.00"})
	if !again.replayed || again.payment.ID != auth || again.payment.CapturedAmount != "10.00" {
		t.Errorf("retried capture: %+v, want a replay", again)
	}
	l.wantError(l.send("capturePayment", auth, k("cap-2"), nil), "PAYMENT_STATE_CONFLICT", 409)
	conflict := l.send("cancelPayment", auth, k("cancel-1"), nil)
	l.wantError(conflict, "PAYMENT_STATE_CONFLICT", 409)
	if conflict.ext[l.statusKey()] != "CAPTURED" {
		t.Errorf("%s = %v, want CAPTURED", l.statusKey(), conflict.ext[l.statusKey()])
	}
	reused := l.send("capturePayment", auth, k("cap-1"), map[string]any{"amount": "9"})
	l.wantError(reused, "IDEMPOTENCY_KEY_REUSED", 409)
	if fmt.Sprint(reused.ext["differingFields"]) != "[amount]" {
		t.Errorf("differingFields = %v, want [amount]", reused.ext["differingFields"])
	}
}

// cancel: applied, replayed; a payment canceled, never captured, has
// nothing to refund.
func (l *lifecycleRows) cancel() {
	t, k := l.t, l.k
	auth2 := l.authorize(k("auth-2"))
	canceled := l.send("cancelPayment", auth2, k("cancel-2"), nil)
	if canceled.code != "" || canceled.payment.Status != "CANCELED" || canceled.payment.CapturedAmount != "0.00" {
		t.Fatalf("cancel: %+v", canceled)
	}
	if again := l.send("cancelPayment", auth2, k("cancel-2"), nil); !again.replayed || again.payment.Status != "CANCELED" {
		t.Errorf("retried cancel: %+v", again)
	}
	l.wantError(l.send("refundPayment", auth2, k("ref-4"), nil), "PAYMENT_STATE_CONFLICT", 409) // never captured
}

// refund: partial, replayed (same refund), over what is left, all that is
// left, then the status refuses; a createPayment key reused for a refund;
// bad input.
func (l *lifecycleRows) refund() {
	t, k := l.t, l.k
	paid := l.b.create(t, k("paid"), input("shop-"+l.tr.name, "100", "BRL", "PIX")).Payment.ID
	first := l.send("refundPayment", paid, k("ref-1"), map[string]any{"amount": "30", "reason": "damaged"})
	if first.code != "" || first.refundID == "" || first.refundAmount != "30.00" || first.replayed ||
		first.payment.Status != "PARTIALLY_REFUNDED" || first.payment.RefundedAmount != "30.00" || len(first.payment.Refunds) != 1 {
		t.Fatalf("refund: %+v", first)
	}
	if l.tr.name == "rest" && (first.httpStatus != 201 || first.location != "/api/payments/"+paid+"/refunds/"+first.refundID) {
		t.Errorf("refund: HTTP %d, Location %q; want 201 and the refund's address", first.httpStatus, first.location)
	}
	retry := l.send("refundPayment", paid, k("ref-1"), map[string]any{"amount": "30.00", "reason": "damaged"})
	if !retry.replayed || retry.refundID != first.refundID || retry.payment.RefundedAmount != "30.00" ||
		(l.tr.name == "rest" && retry.httpStatus != 200) {
		t.Errorf("retried refund: %+v, want a replay of %s", retry, first.refundID)
	}
	l.wantError(l.send("refundPayment", paid, k("ref-1"), map[string]any{"amount": "30"}), "IDEMPOTENCY_KEY_REUSED", 409)
	exceeds := l.send("refundPayment", paid, k("ref-2"), map[string]any{"amount": "70.01"})
	l.wantError(exceeds, "AMOUNT_EXCEEDS_AVAILABLE", 422)
	if exceeds.ext["available"] != "70.00" {
		t.Errorf("available = %v, want 70.00", exceeds.ext["available"])
	}
	rest := l.send("refundPayment", paid, k("ref-2"), nil)
	if rest.code != "" || rest.refundAmount != "70.00" || rest.payment.Status != "REFUNDED" || len(rest.payment.Refunds) != 2 {
		t.Fatalf("refund all that is left: %+v", rest)
	}
	// Nothing left: the status refuses it before the amount does.
	refunded := l.send("refundPayment", paid, k("ref-3"), nil)
	l.wantError(refunded, "PAYMENT_STATE_CONFLICT", 409)
	if refunded.ext[l.statusKey()] != "REFUNDED" {
		t.Errorf("a refund of a REFUNDED payment: %s %v, want REFUNDED", l.statusKey(), refunded.ext[l.statusKey()])
	}
	createKey := l.send("refundPayment", paid, k("paid"), nil)
	l.wantError(createKey, "IDEMPOTENCY_KEY_REUSED", 409)
	if fmt.Sprint(createKey.ext["differingFields"]) != "[operation]" {
		t.Errorf("differingFields = %v, want [operation]", createKey.ext["differingFields"])
	}
	l.wantError(l.send("refundPayment", paid, k("bad"), map[string]any{"amount": "-1"}), "BAD_USER_INPUT", 400)
	if l.tr.name == "graphql" { // HTTP trims header values: REST cannot send the space
		l.wantError(l.send("refundPayment", paid, " "+k("bad"), nil), "BAD_USER_INPUT", 400)
	}
}

// A payment answered by either transport carries its lifecycle, and the
// attempts of every operation show in its timeline.
func TestLifecycleInPaymentQuery(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	id := b.create(t, "p1", input("c", "20", "BRL", "PIX")).Payment.ID
	restLifecycle.send(t, b, "refundPayment", id, "r1", map[string]any{"amount": "5"})
	res := b.gql(t, `query($id: ID!) { payment(id: $id) { status capturedAmount refundedAmount capturedAt canceledAt
		refunds { amount idempotencyKey reason } attempts { operation idempotencyKey outcome refusal } } }`, map[string]any{"id": id})
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	var got struct {
		Payment struct {
			Status, CapturedAmount, RefundedAmount string
			CapturedAt, CanceledAt                 *string
			Refunds                                []struct{ Amount, IdempotencyKey string }
			Attempts                               []struct{ Operation, IdempotencyKey, Outcome string }
		}
	}
	if err := json.Unmarshal(mustJSON(t, res.Data), &got); err != nil {
		t.Fatal(err)
	}
	p := got.Payment
	if p.Status != "PARTIALLY_REFUNDED" || p.CapturedAmount != "20.00" || p.RefundedAmount != "5.00" || p.CapturedAt == nil || p.CanceledAt != nil {
		t.Errorf("payment = %+v", p)
	}
	if len(p.Refunds) != 1 || p.Refunds[0].Amount != "5.00" || p.Refunds[0].IdempotencyKey != "r1" {
		t.Errorf("refunds = %+v", p.Refunds)
	}
	var steps []string
	for _, a := range p.Attempts {
		steps = append(steps, a.Operation+" "+a.IdempotencyKey+" "+a.Outcome)
	}
	if !slices.Equal(steps, []string{"CREATE_PAYMENT p1 CREATED", "REFUND_PAYMENT r1 APPLIED"}) {
		t.Errorf("attempts = %v", steps)
	}
	filtered := b.gql(t, `{ payments(filter: {status: PARTIALLY_REFUNDED}) { edges { node { id } } } }`, nil)
	if !strings.Contains(string(filtered.Data["payments"]), id) {
		t.Errorf("the status filter misses the payment: %s", filtered.Data["payments"])
	}
	none := b.gql(t, `{ payments(filter: {status: CANCELED}) { edges { node { id } } } }`, nil)
	if strings.Contains(string(none.Data["payments"]), id) {
		t.Errorf("the CANCELED filter lists a refunded payment: %s", none.Data["payments"])
	}
}

// With nullable payloads, one failing mutation does not hide another's
// committed result behind "data": null.
func TestFailedMutationDoesNotHideTheOthers(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	res := b.gql(t, `mutation {
		ok: createPayment(input: {clientId: "c", amount: "1", currency: "BRL", method: PIX}, idempotencyKey: "two-1") { payment { id } }
		bad: createPayment(input: {clientId: "c", amount: "-1", currency: "BRL", method: PIX}, idempotencyKey: "two-2") { payment { id } }
	}`, nil)
	if len(res.Errors) != 1 || res.code() != "BAD_USER_INPUT" {
		t.Fatalf("errors = %+v, want one BAD_USER_INPUT", res.Errors)
	}
	if !strings.Contains(string(res.Data["ok"]), `"id":"pay_`) || string(res.Data["bad"]) != "null" {
		t.Errorf("data = ok: %s, bad: %s; want the first payment and null", res.Data["ok"], res.Data["bad"])
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The REST answers' status codes for requests that never reach a payment.
func TestRESTLifecycleStatuses(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	id := b.create(t, "p1", input("c", "20", "BRL", "PIX")).Payment.ID
	for _, tt := range []struct {
		name   string
		header http.Header
		body   string
		status int
		code   string
	}{
		{"no token", http.Header{"Idempotency-Key": {"k"}}, "", 401, "UNAUTHENTICATED"},
		{"no key", restHeaders(""), "", 400, "BAD_USER_INPUT"},
		{"not JSON", restHeaders("k"), `{"amount":`, 400, "BAD_USER_INPUT"},
		{"unknown field", restHeaders("k"), `{"amuont":"1"}`, 400, "BAD_USER_INPUT"},
	} {
		res, raw := b.raw(t, "POST", "/api/payments/"+id+"/refunds", tt.header, tt.body)
		if p := decodeProblem(t, res, raw); res.StatusCode != tt.status || p.Code != tt.code {
			t.Errorf("%s: %d %s, want %d %s", tt.name, res.StatusCode, p.Code, tt.status, tt.code)
		}
	}
	res, raw := b.raw(t, "POST", "/api/payments/"+id+"/cancel", restHeaders("c1"), `{"amount":"1"}`)
	if p := decodeProblem(t, res, raw); res.StatusCode != 400 || p.Code != "BAD_USER_INPUT" {
		t.Errorf("cancel with an amount: %d %s, want 400 BAD_USER_INPUT", res.StatusCode, p.Code)
	}
}

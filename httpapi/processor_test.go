package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/graph"
	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
	"github.com/cmpay/cmpay/payments"
)

// processorPayment is a payment as the engine returns one it sent to a
// processor: status and what the processor said, set by the caller.
func processorPayment(status payments.Status) payments.Payment {
	brl := func(minor int64) payments.Money { return payments.Money{Minor: minor, Currency: "BRL"} }
	return payments.Payment{
		ID: "pay_test", ClientID: "c", Amount: brl(1050), Method: payments.MethodCreditCard, IdempotencyKey: "k1",
		CreatedAt: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC), Status: status, Captured: brl(0), Refunded: brl(0),
		Processor: "stripe",
	}
}

// restExchange answers one REST request with write, as the server's route
// would, and checks the exchange against openapi.json.
func restExchange(t *testing.T, path, body string, write http.HandlerFunc) (*http.Response, []byte) {
	t.Helper()
	req := httptest.NewRequest("POST", "http://127.0.0.1"+path, strings.NewReader(body))
	req.Header = restHeaders("k1")
	rec := httptest.NewRecorder()
	write(rec, req)
	res := rec.Result()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	checkREST(t, req, body, res, out)
	return res, out
}

// What REST answers for each outcome only a processor gives: 202 while the
// answer is unknown (a replay too, with Idempotent-Replayed), 402 for a
// decline and for a refusal, with the codes the contract names; and that
// openapi.json documents each answer.
func TestRESTProcessorOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	created := func(res payments.CreateResult) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { httpapi.WriteCreated(w, r, b.svc, res) }
	}
	changed := func(res payments.ChangeResult) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { httpapi.WriteChanged(w, r, b.svc, res) }
	}
	declined := processorPayment(payments.StatusDeclined)
	declined.DeclineCode = "card_declined"
	pending := processorPayment(payments.StatusAuthorized)
	pending.PendingOperation = payments.OpCapture
	captured := processorPayment(payments.StatusCaptured)
	captured.Captured = captured.Amount
	refund := func(st payments.RefundStatus, code string) *payments.Refund {
		return &payments.Refund{ID: "ref_test", PaymentID: "pay_test", Amount: payments.Money{Minor: 300, Currency: "BRL"},
			IdempotencyKey: "k1", CreatedAt: time.Now().UTC(), Status: st, FailureCode: code}
	}
	const createBody = `{"clientId":"c","amount":"10.50","currency":"BRL","method":"CREDIT_CARD","paymentMethodToken":"pm_card_visa"}`
	for _, tt := range []struct {
		name     string
		path     string
		body     string
		write    http.HandlerFunc
		status   int
		replayed bool
		code     string // the problem's, for a 402
		detail   string // the problem's declineCode or processorCode
	}{
		{"create PROCESSING", "/api/payments", createBody, created(payments.CreateResult{Payment: processorPayment(payments.StatusProcessing)}), 202, false, "", ""},
		{"create PROCESSING replayed", "/api/payments", createBody, created(payments.CreateResult{Payment: processorPayment(payments.StatusProcessing), Replayed: true}), 202, true, "", ""},
		{"create DECLINED", "/api/payments", createBody, created(payments.CreateResult{Payment: declined}), 402, false, "PAYMENT_DECLINED", "card_declined"},
		{"create DECLINED replayed", "/api/payments", createBody, created(payments.CreateResult{Payment: declined, Replayed: true}), 402, true, "PAYMENT_DECLINED", "card_declined"},
		{"create CAPTURED", "/api/payments", createBody, created(payments.CreateResult{Payment: captured}), 201, false, "", ""},
		{"create CAPTURED replayed", "/api/payments", createBody, created(payments.CreateResult{Payment: captured, Replayed: true}), 200, true, "", ""},
		{"create PENDING (Pix)", "/api/payments", createBody, created(payments.CreateResult{Payment: processorPayment(payments.StatusPending)}), 201, false, "", ""},
		{"capture pending", "/api/payments/pay_test/capture", `{}`, changed(payments.ChangeResult{Payment: pending}), 202, false, "", ""},
		{"capture pending replayed", "/api/payments/pay_test/capture", `{}`, changed(payments.ChangeResult{Payment: pending, Replayed: true}), 202, true, "", ""},
		{"capture applied", "/api/payments/pay_test/capture", `{}`, changed(payments.ChangeResult{Payment: captured}), 200, false, "", ""},
		{"refund PROCESSING", "/api/payments/pay_test/refunds", `{"amount":"3"}`, changed(payments.ChangeResult{Payment: captured, Refund: refund(payments.RefundProcessing, "")}), 202, false, "", ""},
		{"refund PROCESSING replayed", "/api/payments/pay_test/refunds", `{"amount":"3"}`, changed(payments.ChangeResult{Payment: captured, Refund: refund(payments.RefundProcessing, ""), Replayed: true}), 202, true, "", ""},
		{"refund SUCCEEDED", "/api/payments/pay_test/refunds", `{"amount":"3"}`, changed(payments.ChangeResult{Payment: captured, Refund: refund(payments.RefundSucceeded, "")}), 201, false, "", ""},
		{"refund FAILED", "/api/payments/pay_test/refunds", `{"amount":"3"}`, changed(payments.ChangeResult{Payment: captured, Refund: refund(payments.RefundFailed, "charge_disputed")}), 402, false, "PROCESSOR_REFUSED", "charge_disputed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, body := restExchange(t, tt.path, tt.body, tt.write)
			if res.StatusCode != tt.status {
				t.Fatalf("status %d, want %d; body %s", res.StatusCode, tt.status, body)
			}
			if got := res.Header.Get("Idempotent-Replayed") == "true"; got != tt.replayed {
				t.Errorf("Idempotent-Replayed %q, want it %v", res.Header.Get("Idempotent-Replayed"), tt.replayed)
			}
			if tt.code == "" {
				return
			}
			p := decodeProblem(t, res, body)
			var extra struct{ DeclineCode, ProcessorCode *string }
			if err := json.Unmarshal(body, &extra); err != nil {
				t.Fatal(err)
			}
			detail := extra.DeclineCode
			if tt.code == "PROCESSOR_REFUSED" {
				detail = extra.ProcessorCode
			}
			if p.Code != tt.code || p.PaymentID != "pay_test" || detail == nil || *detail != tt.detail {
				t.Errorf("problem %s, want code %s, paymentId pay_test and code %s", body, tt.code, tt.detail)
			}
		})
	}
}

// paymentMethodToken is a field of the REST body and of createPayment, and
// every payment shows its processor's fields, on both transports: the
// sandbox's reference and calls, and null for what it has not said.
func TestProcessorFieldsShown(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	res, body := b.raw(t, "POST", "/api/payments", restHeaders("rest-1"),
		`{"clientId":"c","amount":"10.50","currency":"BRL","method":"CREDIT_CARD","paymentMethodToken":"pm_card_visa"}`)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create with paymentMethodToken: %d %s", res.StatusCode, body)
	}
	var rest map[string]any
	if err := json.Unmarshal(body, &rest); err != nil {
		t.Fatal(err)
	}
	if ref, _ := rest["processorReference"].(string); !strings.HasPrefix(ref, "sbx_pi.CREDIT_CARD.c.1050.BRL.") {
		t.Errorf("REST processorReference = %v, want the sandbox's", rest["processorReference"])
	}
	for _, field := range []string{"declineCode", "pendingOperation", "nextAction", "paidAt", "expiredAt"} {
		if v, ok := rest[field]; !ok || v != nil {
			t.Errorf("REST %s = %v (present %v), want null", field, v, ok)
		}
	}
	if rest["processor"] != "sandbox" {
		t.Errorf("REST processor %v, want sandbox", rest["processor"])
	}

	in := input("c", "20", "BRL", "CREDIT_CARD")
	in["paymentMethodToken"] = "pm_card_visa"
	id := b.create(t, "gql-1", in).Payment.ID
	if r := b.gql(t, `mutation { refundPayment(paymentId: "`+id+`", amount: "5", idempotencyKey: "r1") { refund { id } } }`, nil); len(r.Errors) > 0 {
		t.Fatalf("refund: %+v", r.Errors)
	}
	got := b.gql(t, `query($id: ID!) { payment(id: $id) { processor processorReference declineCode pendingOperation
		nextAction { type } paidAt expiredAt processorCalls { operation } refunds { status failureCode } } }`, map[string]any{"id": id})
	if len(got.Errors) > 0 {
		t.Fatalf("payment query: %+v", got.Errors)
	}
	var p map[string]any
	if err := json.Unmarshal(got.Data["payment"], &p); err != nil {
		t.Fatal(err)
	}
	ref, _ := p["processorReference"].(string)
	delete(p, "processorReference")
	const want = `{"declineCode":null,"expiredAt":null,"nextAction":null,"paidAt":null,"pendingOperation":null,` +
		`"processor":"sandbox","processorCalls":[{"operation":"CREATE_PAYMENT"},{"operation":"REFUND_PAYMENT"}],` +
		`"refunds":[{"failureCode":null,"status":"SUCCEEDED"}]}`
	if rest, _ := json.Marshal(p); string(rest) != want || !strings.HasPrefix(ref, "sbx_pi.CREDIT_CARD.") {
		t.Errorf("payment\n got %s (reference %q)\nwant %s and the sandbox's reference", rest, ref, want)
	}
}

// processorCalls shows every call stored for a payment, oldest first, with
// the key, outcome, code and duration as stored, and whether it sent the
// operation or read the processor's record, in one query per page.
func TestProcessorCallsOverGraphQL(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		ids := []string{b.create(t, "a", input("c", "1", "BRL", "PIX")).Payment.ID, b.create(t, "b", input("c", "2", "BRL", "PIX")).Payment.ID}
		at := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
		code := "processing_error"
		// The sandbox's own call of each create (read from the payment)
		// makes way for calls of every outcome, which it never makes.
		if err := db.Gorm.Exec(`UPDATE payments SET create_foreseen = false`).Error; err != nil {
			t.Fatal(err)
		}
		calls := []models.ProcessorCall{
			{OperationID: "op1", PaymentID: ids[0], Operation: "CREATE_PAYMENT", ProcessorKey: "cmpay_op1", Kind: "WRITE", Outcome: "UNKNOWN", At: at, DurationMs: 10000},
			{OperationID: "op1", PaymentID: ids[0], Operation: "CREATE_PAYMENT", ProcessorKey: "cmpay_op1", Kind: "READ", Outcome: "SUCCEEDED", At: at.Add(time.Minute), DurationMs: 42},
			{OperationID: "op2", PaymentID: ids[1], Operation: "CREATE_PAYMENT", ProcessorKey: "cmpay_op2", Kind: "WRITE", Outcome: "ERROR", Code: &code, At: at, DurationMs: 7},
		}
		if err := db.Gorm.Create(&calls).Error; err != nil {
			t.Fatal(err)
		}
		const fields = `processorCalls { operation processorIdempotencyKey outcome code at durationMs kind }`
		one := b.gql(t, `query($id: ID!) { payment(id: $id) { `+fields+` } }`, map[string]any{"id": ids[0]})
		const want = `{"processorCalls":[` +
			`{"operation":"CREATE_PAYMENT","processorIdempotencyKey":"cmpay_op1","outcome":"UNKNOWN","code":null,"at":"2026-12-06T10:00:00Z","durationMs":10000,"kind":"WRITE"},` +
			`{"operation":"CREATE_PAYMENT","processorIdempotencyKey":"cmpay_op1","outcome":"SUCCEEDED","code":null,"at":"2026-12-06T10:01:00Z","durationMs":42,"kind":"READ"}]}`
		if len(one.Errors) > 0 || string(one.Data["payment"]) != want {
			t.Errorf("payment's calls\n got %s %+v\nwant %s", one.Data["payment"], one.Errors, want)
		}
		page := b.gql(t, `{ payments { edges { node { id `+fields+` } } } }`, nil)
		var conn struct {
			Edges []struct {
				Node struct {
					ID             string
					ProcessorCalls []struct{ Outcome, Code *string }
				}
			}
		}
		if err := json.Unmarshal(page.Data["payments"], &conn); err != nil || len(page.Errors) > 0 {
			t.Fatalf("payments: %v %+v", err, page.Errors)
		}
		for _, e := range conn.Edges {
			n := len(e.Node.ProcessorCalls)
			if e.Node.ID == ids[0] && n != 2 || e.Node.ID == ids[1] && (n != 1 || *e.Node.ProcessorCalls[0].Code != code) {
				t.Errorf("payment %s in the page: calls %+v", e.Node.ID, e.Node.ProcessorCalls)
			}
		}
	})
}

// processorCalls is a list, priced as attempts are: by the first or last
// it asks for, or as one item without either (the response's list budget
// bounds what it carries then).
func TestProcessorCallsComplexity(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t), func(d *httpapi.Deps) {
		d.GraphQL = &graph.Options{Introspection: true, MaxDepth: 10, MaxComplexity: 300}
	})
	flat := b.gql(t, `{ payments(first: 10) { edges { node { id amount currency status processor declineCode } } } }`, nil)
	if len(flat.Errors) > 0 {
		t.Fatalf("a page of six fields was refused: %+v", flat.Errors)
	}
	calls := b.gql(t, `{ payments(first: 10) { edges { node { processorCalls(last: 50) { operation outcome code at durationMs } } } } }`, nil)
	if calls.code() != "COMPLEXITY_LIMIT_EXCEEDED" {
		t.Errorf("a page of payments with five fields of their last 50 calls: %+v, want COMPLEXITY_LIMIT_EXCEEDED", calls)
	}
	if all := b.gql(t, `{ payments(first: 10) { edges { node { processorCalls { operation outcome code at durationMs } } } } }`, nil); len(all.Errors) > 0 {
		t.Errorf("a page of payments with five fields of each call: %+v", all.Errors)
	}
}

// A browser client (the TypeScript client) reads Retry-After, to wait as
// long as a 503 or 429 asks.
func TestCORSExposesRetryAfter(t *testing.T) {
	t.Parallel()
	b := setup(t, dbtest.SQLite(t))
	res, _ := b.raw(t, "POST", "/graphql", http.Header{"Origin": {shopOrigin}, "Authorization": {"Bearer " + token},
		"Content-Type": {"application/json"}}, `{"query":"{ payments { edges { cursor } } }"}`)
	if !strings.Contains(res.Header.Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Errorf("Access-Control-Expose-Headers %q lacks Retry-After", res.Header.Get("Access-Control-Expose-Headers"))
	}
}

// Each status a processor adds is a value of PaymentStatus on GraphQL, a
// filter there and on the admin's list, and shows on REST: set on stored
// payments here, since only the engine with a processor reaches them.
func TestProcessorStatusesListed(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		statuses := []payments.Status{payments.StatusProcessing, payments.StatusDeclined, payments.StatusPending, payments.StatusExpired}
		ids := map[payments.Status]string{}
		for _, st := range statuses {
			id := b.create(t, "key-"+string(st), input("c", "5", "BRL", "CREDIT_CARD")).Payment.ID
			if err := db.Gorm.Model(&models.Payment{}).Where("id = ?", id).Update("status", string(st)).Error; err != nil {
				t.Fatal(err)
			}
			ids[st] = id
		}
		for _, st := range statuses {
			got := b.gql(t, `query($st: PaymentStatus) { payments(filter: {status: $st}) { edges { node { id status } } } }`,
				map[string]any{"st": string(st)})
			want := `{"edges":[{"node":{"id":"` + ids[st] + `","status":"` + string(st) + `"}}]}`
			if len(got.Errors) > 0 || string(got.Data["payments"]) != want {
				t.Errorf("payments with status %s: %s %+v, want %s", st, got.Data["payments"], got.Errors, want)
			}
			res, body := b.raw(t, "GET", "/api/payments/"+ids[st], restHeaders(""), "")
			var p struct{ Status string }
			if err := json.Unmarshal(body, &p); err != nil || res.StatusCode != http.StatusOK || p.Status != string(st) {
				t.Errorf("GET a %s payment: %d %s", st, res.StatusCode, body)
			}
			res, doc := b.adminPage(t, "/admin?status="+string(st))
			if keys := rowKeys(doc); res.StatusCode != http.StatusOK || keys != "key-"+string(st) {
				t.Errorf("/admin?status=%s: %d, rows %q", st, res.StatusCode, keys)
			}
		}
	})
}

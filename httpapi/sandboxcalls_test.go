package httpapi_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/models"
)

// processorCalls of sandbox payments captured, canceled and refunded over
// GraphQL: the create's call, then one call per applied change, each a
// WRITE, SUCCEEDED, with no code, under the key its operation was given
// ("cmpay_" and the operation its idempotency key names), at the time of
// the change's APPLIED attempt, 0 ms, oldest first; the same in a page of
// payments as for one.
func TestSandboxChangeCallsOverGraphQL(t *testing.T) {
	t.Parallel()
	dbtest.ForEach(t, func(t *testing.T, db dbtest.DB) {
		b := setup(t, db)
		authorized := func(key string) string {
			in := input("c", "30", "BRL", "CREDIT_CARD")
			in["capture"] = false
			return b.create(t, key, in).Payment.ID
		}
		mutate := func(q string) {
			t.Helper()
			if r := b.gql(t, q, nil); len(r.Errors) > 0 {
				t.Fatalf("%s: %+v", q, r.Errors)
			}
		}
		canceled, refunded := authorized("gql-cancel"), authorized("gql-refund")
		mutate(`mutation { cancelPayment(paymentId: "` + canceled + `", idempotencyKey: "k-cancel") { payment { id } } }`)
		mutate(`mutation { capturePayment(paymentId: "` + refunded + `", amount: "25", idempotencyKey: "k-capture") { payment { id } } }`)
		mutate(`mutation { refundPayment(paymentId: "` + refunded + `", amount: "5", idempotencyKey: "k-refund-1") { refund { id } } }`)
		mutate(`mutation { refundPayment(paymentId: "` + refunded + `", idempotencyKey: "k-refund-2") { refund { id } } }`)

		const fields = `processorCalls { operation processorIdempotencyKey outcome code at durationMs kind }`
		pages := map[string]string{}
		for _, id := range []string{canceled, refunded} {
			one := b.gql(t, `query($id: ID!) { payment(id: $id) { `+fields+` } }`, map[string]any{"id": id})
			if len(one.Errors) > 0 {
				t.Fatalf("payment %s: %+v", id, one.Errors)
			}
			if want := wantSandboxCalls(t, b, db, id); string(one.Data["payment"]) != want {
				t.Errorf("payment %s's calls\n got %s\nwant %s", id, one.Data["payment"], want)
			}
			pages[id] = string(one.Data["payment"])
		}
		page := b.gql(t, `{ payments { edges { node { id `+fields+` } } } }`, nil)
		var conn struct {
			Edges []struct{ Node json.RawMessage }
		}
		if err := json.Unmarshal(page.Data["payments"], &conn); err != nil || len(page.Errors) > 0 {
			t.Fatalf("page: %v %+v", err, page.Errors)
		}
		found := 0
		for _, e := range conn.Edges {
			var n struct{ ID string }
			if err := json.Unmarshal(e.Node, &n); err != nil {
				t.Fatal(err)
			}
			want, ok := pages[n.ID]
			if !ok {
				continue
			}
			found++
			if strings.Replace(string(e.Node), `"id":"`+n.ID+`",`, "", 1) != want {
				t.Errorf("payment %s in a page\n got %s\nwant %s", n.ID, e.Node, want)
			}
		}
		if found != len(pages) {
			t.Errorf("%d of the %d payments in the page", found, len(pages))
		}
	})
}

// wantSandboxCalls is the processorCalls JSON payment id should show, built
// from its createdAt, its attempts and its keys' processor operations.
func wantSandboxCalls(t *testing.T, b *bundle, db dbtest.DB, id string) string {
	t.Helper()
	r := b.gql(t, `query($id: ID!) { payment(id: $id) { createdAt attempts { operation outcome at idempotencyKey } } }`,
		map[string]any{"id": id})
	var p struct {
		CreatedAt string
		Attempts  []struct{ Operation, Outcome, At, IdempotencyKey string }
	}
	if err := json.Unmarshal(r.Data["payment"], &p); err != nil || len(r.Errors) > 0 {
		t.Fatalf("payment %s: %v %+v", id, err, r.Errors)
	}
	call := func(op, key, at string) string {
		return fmt.Sprintf(`{"operation":%q,"processorIdempotencyKey":%q,"outcome":"SUCCEEDED","code":null,"at":%q,"durationMs":0,"kind":"WRITE"}`,
			op, key, at)
	}
	calls := []string{call("CREATE_PAYMENT", "cmpay_op_"+strings.TrimPrefix(id, "pay_"), p.CreatedAt)}
	for _, a := range p.Attempts {
		if a.Outcome != "APPLIED" {
			continue
		}
		var k models.IdempotencyKey
		if err := db.Gorm.Where("client_id = ? AND idempotency_key = ?", "c", a.IdempotencyKey).Take(&k).Error; err != nil ||
			k.ProcessorOperationID == nil {
			t.Fatalf("key %s: %v, operation %v", a.IdempotencyKey, err, k.ProcessorOperationID)
		}
		calls = append(calls, call(a.Operation, "cmpay_"+*k.ProcessorOperationID, a.At))
	}
	return `{"processorCalls":[` + strings.Join(calls, ",") + `]}`
}

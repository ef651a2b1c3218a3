package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// replayedPayment is a payment whose key was replayed n times: n+1 attempts.
func replayedPayment(t *testing.T, svc *payments.Service, n int) string {
	t.Helper()
	var id string
	for range n + 1 {
		res, err := svc.Create(t.Context(), payments.CreateRequest{ClientID: "loop", Amount: "10", Currency: "BRL",
			Method: payments.MethodPix, IdempotencyKey: "retry-loop"})
		if err != nil {
			t.Fatal(err)
		}
		id = res.Payment.ID
	}
	return id
}

type attemptList struct {
	Attempts     []struct{ Outcome string }
	AttemptCount int
}

// A payment's attempts grow with every replay of its key: a list gives
// them all with no argument, as many as asked with first (oldest) or last
// (newest), and attemptCount says how many there are.
func TestPaymentListsCarryABoundedWindow(t *testing.T) {
	t.Parallel()
	svc := mustService(t, dbtest.SQLite(t).Gorm)
	const replays = maxListItems + 20
	id := replayedPayment(t, svc, replays)
	h := NewHandler(svc, DefaultOptions())
	res, _ := serve(t, h, context.Background(), fmt.Sprintf(`{
		all: payment(id: %[1]q) { attempts { outcome } attemptCount }
		oldest: payment(id: %[1]q) { attempts(first: 2) { outcome } }
		newest: payment(id: %[1]q) { attempts(last: 3) { outcome } }
		none: payment(id: %[1]q) { attempts(first: 0) { outcome } }
		others: payment(id: %[1]q) { refunds(last: 5) { id } refundCount processorCalls(first: 5) { at } processorCallCount }
	}`, id))
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	got := map[string]attemptList{}
	for name, raw := range res.Data {
		var l attemptList
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		got[name] = l
	}
	outcomes := func(name string) string {
		var s []string
		for _, a := range got[name].Attempts {
			s = append(s, a.Outcome)
		}
		return strings.Join(s, ",")
	}
	if n := len(got["all"].Attempts); n != replays+1 || got["all"].Attempts[0].Outcome != "CREATED" {
		t.Errorf("no argument: %d attempts starting with %q, want all %d", n, outcomes("all")[:7], replays+1)
	}
	if c := got["all"].AttemptCount; c != replays+1 {
		t.Errorf("attemptCount %d, want %d", c, replays+1)
	}
	for name, want := range map[string]string{"oldest": "CREATED,REPLAYED", "newest": "REPLAYED,REPLAYED,REPLAYED", "none": ""} {
		if outcomes(name) != want {
			t.Errorf("%s: %q, want %q", name, outcomes(name), want)
		}
	}
	if !strings.Contains(string(res.Data["others"]), `"refundCount":0`) || !strings.Contains(string(res.Data["others"]), `"processorCallCount":`) {
		t.Errorf("refunds and processor calls: %s", res.Data["others"])
	}
}

// Asking for more than a response carries, for fewer than none, or from
// both ends is refused as bad input, not cut short.
func TestPaymentListArgumentsAreChecked(t *testing.T) {
	t.Parallel()
	svc := mustService(t, dbtest.SQLite(t).Gorm)
	id := replayedPayment(t, svc, 1)
	h := NewHandler(svc, DefaultOptions())
	for _, args := range []string{"first: 101", "last: -1", "first: 1, last: 1"} {
		for _, list := range []string{"attempts", "refunds", "processorCalls"} {
			res, _ := serve(t, h, context.Background(), fmt.Sprintf(`{ payment(id: %q) { %s(%s) { __typename } } }`, id, list, args))
			if res.code() != "BAD_USER_INPUT" || string(res.Data["payment"]) != "null" {
				t.Errorf("%s(%s): %s %+v, want BAD_USER_INPUT", list, args, res.Data["payment"], res.Errors)
			}
		}
	}
}

// What a document can get back is bounded by its cost: the lists it asks
// for are priced by the size asked (or, with no argument, as before), and
// all of them together carry at most MaxComplexity items, however many
// replays the payment has.
func TestListsBoundWhatAResponseCarries(t *testing.T) {
	t.Parallel()
	svc := mustService(t, dbtest.SQLite(t).Gorm)
	id := replayedPayment(t, svc, 2*maxListItems)
	h := NewHandler(svc, DefaultOptions())
	aliases := func(n int, sel string) string {
		var q strings.Builder
		q.WriteString("{")
		for i := range n {
			fmt.Fprintf(&q, " a%d: payment(id: %q) { %s { at } }", i, id, sel)
		}
		return q.String() + " }"
	}
	const attempts = 2*maxListItems + 1
	// 20 aliases at the default price fit the limit, and get all 201
	// attempts each: 4,020 items, within the budget.
	res, _ := serve(t, h, context.Background(), aliases(20, "attempts"))
	if len(res.Errors) > 0 {
		t.Fatalf("refused: %+v", res.Errors)
	}
	items := 0
	for _, raw := range res.Data {
		var l struct{ Attempts []json.RawMessage }
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		items += len(l.Attempts)
	}
	if items != 20*attempts {
		t.Errorf("%d attempts in the response, want %d", items, 20*attempts)
	}
	// The same with first: 100 is priced at 100 items a list.
	res, _ = serve(t, h, context.Background(), aliases(50, "attempts(first: 100)"))
	if res.code() != codeTooComplex {
		t.Errorf("%+v, want %s", res.Errors, codeTooComplex)
	}
	// 80 aliases at the default price (34 each) fit the limit too, but
	// would carry 16,080 items: the response carries the lists that fit in
	// MaxComplexity items, and refuses the lists past that.
	res, _ = serve(t, h, context.Background(), aliases(80, "attempts"))
	items, refused := 0, 0
	for _, raw := range res.Data {
		var l *struct{ Attempts []json.RawMessage }
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		if l == nil {
			refused++
			continue
		}
		items += len(l.Attempts)
	}
	if fit := DefaultOptions().MaxComplexity / attempts; items != fit*attempts || refused != 80-fit {
		t.Errorf("%d items and %d lists refused, want %d items and %d refused", items, refused, fit*attempts, 80-fit)
	}
	if res.code() != codeTooComplex || !strings.Contains(res.Errors[0].Message, fmt.Sprintf("at most %d items", DefaultOptions().MaxComplexity)) {
		t.Errorf("errors %+v, want the lists past the budget refused as too costly", res.Errors)
	}
}

func TestWindow(t *testing.T) {
	t.Parallel()
	items := []int{1, 2, 3, 4, 5}
	n := func(i int) *int { return &i }
	for _, tt := range []struct {
		first, last *int
		want        string
	}{
		{nil, nil, "[1 2 3 4 5]"},
		{n(2), nil, "[1 2]"},
		{nil, n(2), "[4 5]"},
		{n(9), nil, "[1 2 3 4 5]"},
		{nil, n(0), "[]"},
	} {
		got, err := window(items, tt.first, tt.last)
		if err != nil || fmt.Sprint(got) != tt.want {
			t.Errorf("window(%v, %v): %v %v, want %s", tt.first, tt.last, got, err, tt.want)
		}
	}
	long := make([]int, maxListItems+1)
	if got, _ := window(long, nil, nil); len(got) != len(long) {
		t.Errorf("no argument: %d items, want all %d", len(got), len(long))
	}
	// A subscription's event carries the oldest maxListItems of a list
	// asked with no argument.
	sub := graphql.WithOperationContext(context.Background(),
		&graphql.OperationContext{Operation: &ast.OperationDefinition{Operation: ast.Subscription}})
	if got, err := listWindow(sub, long, nil, nil); err != nil || len(got) != maxListItems {
		t.Errorf("in a subscription, no argument: %d items, %v; want %d", len(got), err, maxListItems)
	}
	if got, err := listWindow(context.Background(), long, nil, nil); err != nil || len(got) != len(long) {
		t.Errorf("outside one, no argument: %d items, %v; want all %d", len(got), err, len(long))
	}
}

// A mutation that was applied keeps its payload: a list past the
// response's budget is cut to what is left, not refused (which would null
// the payload, as if nothing had been done). 45 aliases of a payment's 201
// attempts ask for 9,045 items; the refund is answered with the budget's
// 5,000 of them.
func TestAMutationsListsAreCutToTheBudget(t *testing.T) {
	t.Parallel()
	svc := mustService(t, dbtest.SQLite(t).Gorm)
	id := replayedPayment(t, svc, 2*maxListItems)
	h := NewHandler(svc, DefaultOptions())
	var q strings.Builder
	fmt.Fprintf(&q, `mutation { refundPayment(paymentId: %q, amount: "1.00", idempotencyKey: "cut") { refund { id } payment {`, id)
	for i := range 45 {
		fmt.Fprintf(&q, " a%d: attempts { at }", i)
	}
	q.WriteString(" } } }")
	res, _ := serve(t, h, context.Background(), q.String())
	if len(res.Errors) > 0 {
		t.Fatalf("errors %+v, want none", res.Errors)
	}
	var payload struct {
		Refund  *struct{ ID string }
		Payment map[string][]json.RawMessage
	}
	if err := json.Unmarshal(res.Data["refundPayment"], &payload); err != nil {
		t.Fatal(err)
	}
	items := 0
	for _, l := range payload.Payment {
		items += len(l)
	}
	if limit := DefaultOptions().MaxComplexity; payload.Refund == nil || items != limit {
		t.Errorf("refund %v, %d attempts in the payload; want the refund and %d", payload.Refund, items, limit)
	}
}

// Each event of a subscription has a budget of its own, as each response
// does: a document's lists are bounded per event, however many events come.
func TestEachSubscriptionEventHasItsBudget(t *testing.T) {
	t.Parallel()
	ctx := graphql.WithOperationContext(context.Background(),
		&graphql.OperationContext{Operation: &ast.OperationDefinition{Operation: ast.Subscription}})
	var budgets []*listBudget
	events := withListBudget(50)(ctx, func(context.Context) graphql.ResponseHandler {
		return func(ctx context.Context) *graphql.Response {
			b, _ := ctx.Value(listBudgetKey{}).(*listBudget)
			budgets = append(budgets, b)
			if _, err := takeListItems(ctx, 40); err != nil {
				t.Errorf("event %d: %v, want its 40 items within its own budget", len(budgets), err)
			}
			return &graphql.Response{}
		}
	})
	for range 3 {
		events(ctx)
	}
	if len(budgets) != 3 || budgets[0] == nil || budgets[0] == budgets[1] || budgets[1] == budgets[2] {
		t.Errorf("budgets %v, want a new one for each of 3 events", budgets)
	}
}

// A mutation that was applied keeps its payload when one of its lists is
// asked for out of bounds: the error is said beside the payload, and the
// list given within the bounds.
func TestAMutationsBadListArgumentKeepsThePayload(t *testing.T) {
	t.Parallel()
	svc := mustService(t, dbtest.SQLite(t).Gorm)
	id := replayedPayment(t, svc, 2)
	h := NewHandler(svc, DefaultOptions())
	res, _ := serve(t, h, context.Background(), fmt.Sprintf(`mutation { refundPayment(paymentId: %q, amount: "1.00",
		idempotencyKey: "bad-list") { refund { id } payment { attempts(first: 101) { at } a: attempts(first: 1, last: 1) { at } } } }`, id))
	var payload struct {
		Refund  *struct{ ID string }
		Payment struct{ Attempts, A []json.RawMessage }
	}
	if err := json.Unmarshal(res.Data["refundPayment"], &payload); err != nil {
		t.Fatal(err)
	}
	if payload.Refund == nil || len(payload.Payment.Attempts) != 4 || len(payload.Payment.A) != 1 {
		t.Errorf("payload %s; want the refund, the 4 attempts and the first one", res.Data["refundPayment"])
	}
	if res.code() != "BAD_USER_INPUT" || len(res.Errors) != 2 {
		t.Errorf("errors %+v, want the two arguments refused as BAD_USER_INPUT", res.Errors)
	}
}

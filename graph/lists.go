package graph

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/cmpay/cmpay/payments"
)

// maxListItems is the most items first or last may ask of one of a
// payment's lists (attempts, refunds, processor calls), and what one such
// list carries in a subscription's event when neither is given. A client
// in a retry loop adds an attempt with every replay: 20,000 replays under
// 30 aliases answered 87 MB when nothing bounded the lists.
const maxListItems = 100

// listWindow is window, taken from the response's list budget. With
// neither first nor last, a list gives every item, as the contract has
// attempts show every attempt, within the budget; a subscription has no
// budget (withListBudget), so its event's list gives the oldest
// maxListItems.
func listWindow[T any](ctx context.Context, items []T, first, last *int) ([]T, error) {
	out, err := window(items, first, last)
	if err != nil {
		return nil, err
	}
	if first == nil && last == nil && len(out) > maxListItems && inSubscription(ctx) {
		out = out[:maxListItems]
	}
	if err := takeListItems(ctx, len(out)); err != nil {
		return nil, err
	}
	return out, nil
}

// inSubscription reports whether ctx is a subscription's.
func inSubscription(ctx context.Context) bool {
	if !graphql.HasOperationContext(ctx) {
		return false
	}
	op := graphql.GetOperationContext(ctx).Operation
	return op != nil && op.Operation == ast.Subscription
}

// window is the part of a payment's list, oldest first, that one response
// carries: the oldest first items, the newest last items, or with neither
// all of them. Asking for more than maxListItems, for fewer than none, or
// with both is refused rather than cut: the client asked for something it
// will not get.
func window[T any](items []T, first, last *int) ([]T, error) {
	if first != nil && last != nil {
		return nil, listArgumentError("first", "give first or last, not both")
	}
	n, fromEnd := len(items), false
	switch {
	case first != nil:
		if err := checkListArgument("first", *first); err != nil {
			return nil, err
		}
		n = *first
	case last != nil:
		if err := checkListArgument("last", *last); err != nil {
			return nil, err
		}
		n, fromEnd = *last, true
	}
	if len(items) <= n {
		return items, nil
	}
	if fromEnd {
		return items[len(items)-n:], nil
	}
	return items[:n], nil
}

func checkListArgument(name string, n int) error {
	if n < 0 || n > maxListItems {
		return listArgumentError(name, fmt.Sprintf("%s must be from 0 to %d", name, maxListItems))
	}
	return nil
}

func listArgumentError(field, message string) error {
	return &payments.InvalidInputError{Problems: []payments.Problem{{Field: field, Message: message}}}
}

// listSize is how many items complexity assumes one of a payment's lists
// holds: what the client asked for, or listMultiplier when it did not ask
// (the estimate from before the lists took a bound, kept so that existing
// queries keep within the limit; the list budget caps what they get).
func listSize(first, last *int) int {
	n := listMultiplier
	switch {
	case first != nil && last != nil:
		return maxListItems // refused when it runs
	case first != nil:
		n = *first
	case last != nil:
		n = *last
	}
	return min(max(n, 0), maxListItems)
}

// listBudget is how many more items of payments' lists one response may
// carry. Without first or last a list is priced as listMultiplier items
// but carries every item, so without a budget a document within the
// complexity limit could get any number of items.
type listBudget struct {
	limit int
	left  atomic.Int64 // resolvers of one response run concurrently
}

type listBudgetKey struct{}

// withListBudget gives each query and mutation a budget of limit list
// items (none when limit is 0, as the complexity limit is off then). A subscription has none: each of its events is a response of its
// own, of one payment, which maxListItems bounds.
func withListBudget(limit int) graphql.OperationMiddleware {
	return func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		if op := graphql.GetOperationContext(ctx).Operation; limit > 0 && op != nil && op.Operation != ast.Subscription {
			b := &listBudget{limit: limit}
			b.left.Store(int64(limit))
			ctx = context.WithValue(ctx, listBudgetKey{}, b)
		}
		return next(ctx)
	}
}

// takeListItems spends n items of the response's budget, or refuses the
// list once the budget is spent (the lists that came first keep theirs).
func takeListItems(ctx context.Context, n int) error {
	b, _ := ctx.Value(listBudgetKey{}).(*listBudget)
	if b == nil || n == 0 || b.left.Add(-int64(n)) >= 0 {
		return nil
	}
	err := gqlerror.Errorf("one response carries at most %d items of payments' attempts, refunds and processor calls: "+
		"ask for fewer with first or last, or for fewer payments", b.limit)
	errcode.Set(err, codeTooComplex)
	return err
}

package graph

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vikstrous/dataloadgen"

	"github.com/cmpay/cmpay/payments"
)

// maxListItems is the most items first or last may ask of one of a
// payment's lists (attempts, refunds, processor calls), and what one such
// list carries in a subscription's event when neither is given. A client
// in a retry loop adds an attempt with every replay: 20,000 replays under
// 30 aliases answered 87 MB when nothing bounded the lists.
const maxListItems = 100

// loadWindow is listWindow over p's list as l loads it: the attempts,
// refunds or processor calls field with its first and last.
func loadWindow[T any](ctx context.Context, l *dataloadgen.Loader[payments.Payment, []T], p payments.Payment,
	first, last *int) ([]T, error) {
	all, err := l.Load(ctx, p)
	if err != nil {
		return nil, err
	}
	return listWindow(ctx, all, first, last)
}

// listWindow is window, taken from the response's list budget. With
// neither first nor last, a list gives every item, as the contract has
// attempts show every attempt, within the budget; in a subscription's
// event, its oldest maxListItems.
func listWindow[T any](ctx context.Context, items []T, first, last *int) ([]T, error) {
	out, err := window(items, first, last)
	if err != nil && operationIs(ctx, ast.Mutation) {
		// A mutation's payload answers a request that was applied: its
		// error is said beside it, and the list given as asked within
		// the bounds, rather than the payload nulled as if nothing had
		// been done.
		graphql.AddError(ctx, err)
		first, last = clamp(first), clamp(last)
		if first != nil {
			last = nil
		}
		out, err = window(items, first, last)
	}
	if err != nil {
		return nil, err
	}
	if first == nil && last == nil && len(out) > maxListItems && inSubscription(ctx) {
		out = out[:maxListItems]
	}
	n, err := takeListItems(ctx, len(out))
	if err != nil {
		return nil, err
	}
	return out[:n], nil
}

// inSubscription reports whether ctx is a subscription's.
func inSubscription(ctx context.Context) bool { return operationIs(ctx, ast.Subscription) }

// operationIs reports whether ctx is an operation of kind's.
func operationIs(ctx context.Context, kind ast.Operation) bool {
	if !graphql.HasOperationContext(ctx) {
		return false
	}
	op := graphql.GetOperationContext(ctx).Operation
	return op != nil && op.Operation == kind
}

// clamp is n within 0 to maxListItems; nil stays nil.
func clamp(n *int) *int {
	if n == nil {
		return nil
	}
	c := min(max(*n, 0), maxListItems)
	return &c
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
// (the list budget caps what such a list gets).
func listSize(first, last *int) int {
	switch {
	case first != nil && last != nil:
		return maxListItems // refused when it runs
	case first != nil:
		return *clamp(first)
	case last != nil:
		return *clamp(last)
	}
	return listMultiplier
}

// listBudget is how many more items of payments' lists one response may
// carry. Without first or last a list is priced as listMultiplier items
// but carries every item, so without a budget a document within the
// complexity limit could get any number of items.
type listBudget struct {
	limit int
	// cut: a list past the budget is cut to what is left rather than
	// refused. A mutation's payload is the answer of a request that was
	// applied: refusing a list there would null the payload and read as
	// nothing done.
	cut  bool
	left atomic.Int64 // resolvers of one response run concurrently
}

type listBudgetKey struct{}

// withListBudget gives each response a budget of limit list items (none
// when limit is 0, as the complexity limit is off then): a query's or a
// mutation's, and each event of a subscription, one payment each.
func withListBudget(limit int) graphql.OperationMiddleware {
	return func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
		op := graphql.GetOperationContext(ctx).Operation
		if limit <= 0 || op == nil {
			return next(ctx)
		}
		if op.Operation != ast.Subscription {
			return next(withBudget(ctx, limit, op.Operation))
		}
		events := next(ctx)
		return func(ctx context.Context) *graphql.Response { return events(withBudget(ctx, limit, op.Operation)) }
	}
}

// withBudget is ctx with a response's list budget of limit items, for an
// operation of kind.
func withBudget(ctx context.Context, limit int, kind ast.Operation) context.Context {
	b := &listBudget{limit: limit, cut: kind == ast.Mutation}
	b.left.Store(int64(limit))
	return context.WithValue(ctx, listBudgetKey{}, b)
}

// takeListItems spends up to n items of the response's budget and says
// how many a list may carry: n, or in a mutation what is left; past the
// budget elsewhere the list is refused, spending nothing (the lists that
// fit keep theirs).
func takeListItems(ctx context.Context, n int) (int, error) {
	b, _ := ctx.Value(listBudgetKey{}).(*listBudget)
	if b == nil || n == 0 {
		return n, nil
	}
	for {
		left := b.left.Load()
		take := int64(n)
		if take > left {
			if !b.cut {
				err := gqlerror.Errorf("one response carries at most %d items of payments' attempts, refunds and "+
					"processor calls: ask for fewer with first or last, or for fewer payments", b.limit)
				errcode.Set(err, codeTooComplex)
				return 0, err
			}
			take = max(left, 0)
		}
		if b.left.CompareAndSwap(left, left-take) {
			return int(take), nil
		}
	}
}

package graph

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vikstrous/dataloadgen"

	"github.com/cmpay/cmpay/payments"
)

// Loaders batch what each payment of a list needs beside itself, so that a
// page of payments with their attempts, refunds and processor calls costs
// one query for each, not one per payment (the N+1 queries of resolving them one by one).
// gqlgen resolves the payments of a list concurrently; a loader collects
// the keys they ask for during loaderWait, then fetches them together.
// Loaders live for one request: nothing is cached across requests.
type loaders struct {
	attempts *dataloadgen.Loader[payments.Payment, []payments.Attempt]
	refunds  *dataloadgen.Loader[payments.Payment, []payments.Refund]
	// processorCalls are each payment's calls to its processor.
	processorCalls *dataloadgen.Loader[payments.Payment, []payments.ProcessorCall]
	// async are each Pix or boleto's next action, paidAt and expiredAt.
	async *dataloadgen.Loader[payments.Payment, payments.AsyncState]
}

// loaderWait is how long a loader waits for more keys before it fetches.
const loaderWait = time.Millisecond

type loadersKey struct{}

func newLoaders(svc *payments.Service) *loaders {
	return &loaders{
		attempts:       dataloadgen.NewLoader(batched(svc.AttemptsOf), dataloadgen.WithWait(loaderWait)),
		refunds:        dataloadgen.NewLoader(batched(svc.RefundsOf), dataloadgen.WithWait(loaderWait)),
		processorCalls: dataloadgen.NewLoader(batched(svc.ProcessorCallsOf), dataloadgen.WithWait(loaderWait)),
		async:          dataloadgen.NewLoader(batched(svc.AsyncStatesOf), dataloadgen.WithWait(loaderWait)),
	}
}

// batched adapts a batch read of the payments package to a loader's fetch.
func batched[T any](read func(context.Context, []payments.Payment) ([]T, error)) func(context.Context, []payments.Payment) ([]T, []error) {
	return func(ctx context.Context, ps []payments.Payment) ([]T, []error) {
		out, err := read(ctx, ps)
		if err != nil {
			return nil, []error{err}
		}
		return out, nil
	}
}

// requestLoaders are one request's loaders, made when a resolver first
// asks: most requests (a create, a capture) never do, and making them
// costs a dozen allocations.
type requestLoaders struct {
	once sync.Once
	svc  *payments.Service
	l    *loaders
}

func (rl *requestLoaders) get() *loaders {
	rl.once.Do(func() { rl.l = newLoaders(rl.svc) })
	return rl.l
}

// withLoaders gives each request loaders of its own.
func withLoaders(svc *payments.Service, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), loadersKey{}, &requestLoaders{svc: svc})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// loadersFrom returns the request's loaders, or fresh ones for a context
// that has none (a resolver called outside an HTTP request).
func loadersFrom(ctx context.Context, svc *payments.Service) *loaders {
	if rl, ok := ctx.Value(loadersKey{}).(*requestLoaders); ok {
		return rl.get()
	}
	return newLoaders(svc)
}

// prime reads, for a page of payments, the per-payment fields the query
// asks of its nodes, each in one query, and primes the loaders with them.
// A loader alone batches by timing (the keys asked for within loaderWait);
// priming from the page makes the page's cost exact: one query per field,
// whatever the page's size and however busy the machine.
func prime(ctx context.Context, svc *payments.Service, page []payments.Payment, path ...string) error {
	l := loadersFrom(ctx, svc)
	if asked(ctx, append(path, "attempts")...) {
		all, err := svc.AttemptsOf(ctx, page)
		if err != nil {
			return err
		}
		for i, p := range page {
			l.attempts.Prime(p, all[i])
		}
	}
	if asked(ctx, append(path, "refunds")...) {
		all, err := svc.RefundsOf(ctx, page)
		if err != nil {
			return err
		}
		for i, p := range page {
			l.refunds.Prime(p, all[i])
		}
	}
	if asked(ctx, append(path, "processorCalls")...) {
		all, err := svc.ProcessorCallsOf(ctx, page)
		if err != nil {
			return err
		}
		for i, p := range page {
			l.processorCalls.Prime(p, all[i])
		}
	}
	return nil
}

// asked reports whether the current field's selection reaches the field at
// path (through fragments too): ("edges", "node", "attempts").
func asked(ctx context.Context, path ...string) bool {
	oc := graphql.GetOperationContext(ctx)
	fields := graphql.CollectFieldsCtx(ctx, nil)
	for _, name := range path {
		var next []graphql.CollectedField
		found := false
		for _, f := range fields {
			if f.Name == name {
				found = true
				next = append(next, graphql.CollectFields(oc, f.Selections, nil)...)
			}
		}
		if !found {
			return false
		}
		fields = next
	}
	return true
}

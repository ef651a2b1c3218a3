package graph

import (
	"context"
	"net/http"
	"slices"
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
// costs a dozen allocations. In a subscription they are one event's (or
// one batch of replayed events'), never the stream's: a stream open for a
// day would otherwise hold every list it ever showed (withEventLoaders).
type requestLoaders struct {
	once sync.Once
	svc  *payments.Service
	// l, if set before the first get, are loaders made and primed
	// beforehand (forward's, for a batch of events).
	l *loaders
}

func (rl *requestLoaders) get() *loaders {
	rl.once.Do(func() {
		if rl.l == nil {
			rl.l = newLoaders(rl.svc)
		}
	})
	return rl.l
}

// withLoaders gives each request loaders of its own.
func withLoaders(svc *payments.Service, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), loadersKey{}, &requestLoaders{svc: svc})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// withOwnLoaders is ctx with loaders of its own in place of the request's:
// l, or fresh ones when l is nil. A ctx without the request's (no
// withLoaders) is left as it is.
func withOwnLoaders(ctx context.Context, l *loaders) context.Context {
	rl, ok := ctx.Value(loadersKey{}).(*requestLoaders)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, loadersKey{}, &requestLoaders{svc: rl.svc, l: l})
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
// asks of its nodes, each in one query, and primes the request's loaders
// with them. A loader alone batches by timing (the keys asked for within
// loaderWait); priming from the page makes the page's cost exact: one
// query per field, whatever the page's size and however busy the machine.
func prime(ctx context.Context, svc *payments.Service, page []payments.Payment, path ...string) error {
	return primeInto(ctx, loadersFrom(ctx, svc), svc, page, path...)
}

// primeInto is prime into the loaders l: path leads from the current
// field to the payments, ("edges", "node") for a page, ("payment") for a
// subscription's events.
func primeInto(ctx context.Context, l *loaders, svc *payments.Service, page []payments.Payment, path ...string) error {
	if len(page) == 0 {
		return nil
	}
	if err := primeList(ctx, l.attempts, svc.AttemptsOf, page, path, "attempts", "attemptCount"); err != nil {
		return err
	}
	if err := primeList(ctx, l.refunds, svc.RefundsOf, page, path, "refunds", "refundCount"); err != nil {
		return err
	}
	if err := primeList(ctx, l.processorCalls, svc.ProcessorCallsOf, page, path, "processorCalls", "processorCallCount"); err != nil {
		return err
	}
	return primeList(ctx, l.async, svc.AsyncStatesOf, page, path, "nextAction", "paidAt", "expiredAt")
}

// primeList reads, when the query asks for one of fields at path, every
// payment's value in one read, and primes loader with them.
func primeList[T any](ctx context.Context, loader *dataloadgen.Loader[payments.Payment, T],
	read func(context.Context, []payments.Payment) ([]T, error), page []payments.Payment, path []string, fields ...string) error {
	if !slices.ContainsFunc(fields, func(f string) bool { return asked(ctx, append(slices.Clip(path), f)...) }) {
		return nil
	}
	all, err := read(ctx, page)
	if err != nil {
		return err
	}
	for i, p := range page {
		loader.Prime(p, all[i])
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

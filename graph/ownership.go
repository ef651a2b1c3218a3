package graph

import (
	"context"

	"github.com/cmpay/cmpay/auth"
	"github.com/cmpay/cmpay/webhooks"
)

// webhookOwner is whose webhook endpoints the request's token lists and
// deletes. A client-bound token: its client's. An unbound token that may
// read payments: every client's. An unbound token with webhooks:manage
// alone: only the endpoints of no client, so that it reads no client's
// endpoint URLs (which may carry the receiver's credentials).
func (r *Resolver) webhookOwner(ctx context.Context) webhooks.Owner {
	if client := r.clientOf(ctx); client != "" {
		return webhooks.Owner{Client: client}
	}
	if r.ClientOf != nil && auth.Require(ctx, auth.PaymentsRead) != nil {
		return webhooks.Owner{}
	}
	return webhooks.Owner{All: true}
}

// mayReceive refuses to make an endpoint for a token that may not read
// payments: every delivery carries a payment, so an endpoint receives only
// what its creator's token may read (its client's payments when bound).
func (r *Resolver) mayReceive(ctx context.Context) error {
	if r.ClientOf == nil {
		return nil // no API tokens in front (the graph package's own tests)
	}
	return auth.Require(ctx, auth.PaymentsRead)
}

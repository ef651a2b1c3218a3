package graph

import (
	"context"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/cmpay/cmpay/events"
)

// TestEachEventResolvesWithItsBatchLoaders: a subscription's events are
// resolved with loaders of their own, never the stream's (which would keep
// every list the stream ever showed): the events sent together
// (Following) share the loaders forward made for them, and every other
// event gets its own.
func TestEachEventResolvesWithItsBatchLoaders(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ctx = graphql.WithOperationContext(ctx, &graphql.OperationContext{Operation: &ast.OperationDefinition{Operation: ast.Subscription}})
	stream := &requestLoaders{}
	ctx = context.WithValue(ctx, loadersKey{}, stream)
	streamLoaders := stream.get()

	sent := make(chan events.Event)
	sub := &events.Subscription{C: sent}
	var made []*loaders // by forward's goroutine, read once it has ended
	forwarded := make(chan struct{})
	handler := withEventLoaders(ctx, func(ctx context.Context) graphql.ResponseHandler {
		out := make(chan *events.Event)
		feed := ctx.Value(eventFeedKey{}).(*eventFeed)
		feed.start()
		go func() {
			defer close(forwarded)
			defer close(out)
			defer feed.stop()
			forward(ctx, nil, sub, out, feed, func([]events.Event) *loaders {
				l := newLoaders(nil)
				made = append(made, l)
				return l
			})
		}()
		// One event per response, resolved with the response's loaders.
		return func(ctx context.Context) *graphql.Response {
			e, ok := <-out
			if !ok {
				return nil
			}
			if got := loadersFrom(ctx, nil); got != nil {
				return &graphql.Response{Extensions: map[string]any{"id": e.ID, "loaders": got}}
			}
			return &graphql.Response{}
		}
	})
	go func() {
		defer close(sent)
		// A replayed page of three, then two live events.
		for i, following := range []int{2, 1, 0, 0, 0} {
			sent <- events.Event{ID: int64(i + 1), Following: following}
		}
	}()
	var got []*loaders
	for {
		resp := handler(ctx)
		if resp == nil {
			break
		}
		if id := resp.Extensions["id"].(int64); id != int64(len(got)+1) {
			t.Fatalf("event %d came as the %d-th", id, len(got)+1)
		}
		got = append(got, resp.Extensions["loaders"].(*loaders))
	}
	<-forwarded
	if len(got) != 5 || len(made) != 3 {
		t.Fatalf("%d events resolved, %d batches made; want 5 and 3", len(got), len(made))
	}
	want := []*loaders{made[0], made[0], made[0], made[1], made[2]}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("event %d resolved with other loaders than its batch's", i+1)
		}
		if got[i] == streamLoaders {
			t.Errorf("event %d resolved with the stream's loaders", i+1)
		}
	}
}

// TestWebsocketQueriesResolveWithLoadersOfTheirOwn: a query sent over a
// WebSocket does not use the socket's request loaders, which live as long
// as the socket and would answer a later query with the lists an earlier
// one read; a query over plain HTTP keeps its request's.
func TestWebsocketQueriesResolveWithLoadersOfTheirOwn(t *testing.T) {
	t.Parallel()
	for _, websocket := range []bool{true, false} {
		ctx := graphql.WithOperationContext(t.Context(), &graphql.OperationContext{Operation: &ast.OperationDefinition{Operation: ast.Query}})
		request := &requestLoaders{}
		ctx = context.WithValue(ctx, loadersKey{}, request)
		if websocket {
			ctx = context.WithValue(ctx, connectionKey{}, &connection{websocket: true})
		}
		var used []*loaders
		for range 2 {
			withEventLoaders(ctx, func(ctx context.Context) graphql.ResponseHandler {
				used = append(used, loadersFrom(ctx, nil))
				return graphql.OneShot(&graphql.Response{})
			})
		}
		shared := used[0] == request.get() || used[1] == request.get() || used[0] == used[1]
		if websocket && shared {
			t.Errorf("two queries over one WebSocket resolved with shared loaders")
		}
		if !websocket && (used[0] != request.get() || used[1] != request.get()) {
			t.Errorf("a query over HTTP did not resolve with its request's loaders")
		}
	}
}

package httpapi_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
)

// BenchmarkCreatePaymentHandler sends createPayment through the whole HTTP
// handler (middleware, auth, GraphQL, domain, PostgreSQL), in process, from
// parallel goroutines: the server's cost per request without the network.
func BenchmarkCreatePaymentHandler(b *testing.B) {
	bundle := setupB(b, dbtest.Postgres(b))
	var n atomic.Int64
	for _, mode := range []string{"new-key", "replay", "conflict"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := fmt.Sprintf("bench-%d", n.Add(1))
					amount, wantErr := "10.00", ""
					switch mode {
					case "replay":
						key = fmt.Sprintf("bench-%d", n.Add(1)%50+1)
					case "conflict": // the replayed keys with another amount
						key, amount, wantErr = fmt.Sprintf("bench-%d", n.Add(1)%50+1), "11.00", "IDEMPOTENCY_KEY_REUSED"
					}
					body := `{"query":"mutation($in: CreatePaymentInput!, $key: String!) { createPayment(input: $in, idempotencyKey: $key) { replayed payment { id } } }","variables":{"key":"` + key + `","in":{"clientId":"bench","amount":"` + amount + `","currency":"BRL","method":"PIX"}}}`
					req := httptest.NewRequest("POST", "/graphql", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+token)
					rec := httptest.NewRecorder()
					bundle.handler.ServeHTTP(rec, req)
					if got := rec.Body.String(); rec.Code != http.StatusOK || wantErr == "" && strings.Contains(got, "errors") ||
						wantErr != "" && !strings.Contains(got, wantErr) {
						b.Fatalf("%d %s", rec.Code, got)
					}
				}
			})
		})
	}
}

// BenchmarkFloorHandler sends the load generator's floor query, { __typename },
// through the whole HTTP handler: the middleware, the access line (encoded as
// the server encodes it, then dropped), auth and GraphQL, with no database
// work. It is the fixed cost every request pays short of net/http itself.
func BenchmarkFloorHandler(b *testing.B) {
	bundle := setupB(b, dbtest.SQLite(b), func(d *httpapi.Deps) {
		d.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	})
	const body = `{"query":"{ __typename }"}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/graphql", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		bundle.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || rec.Body.String() != `{"data":{"__typename":"Query"}}` {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

package httpapi_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
)

// TestListReadsNextActionsOnce: a page of waiting Pix payments reads their
// next actions in one query, not one per payment.
func TestListReadsNextActionsOnce(t *testing.T) {
	t.Parallel()
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			db, reads := countedDB(t, dialect)
			cfg := processor.DefaultConfig()
			cfg.SandboxMethods = processor.SandboxAsync
			svc, err := payments.NewService(db.Gorm, payments.Config{Processor: sandbox.New(cfg)})
			if err != nil {
				t.Fatal(err)
			}
			b := setup(t, db, func(d *httpapi.Deps) { d.Service = svc })
			const n = 6
			for i := range n {
				method := "PIX"
				if i%2 == 1 {
					method = "BOLETO"
				}
				b.create(t, fmt.Sprintf("wait-%d", i), input("shop-wait", "10", "BRL", method))
			}
			b.create(t, "card", input("shop-wait", "10", "BRL", "CREDIT_CARD"))
			reads.take()
			res := b.gql(t, `{ payments(first: 100) { edges { node { status nextAction { type pixCode boletoLine expiresAt } paidAt expiredAt } } } }`, nil)
			if len(res.Errors) > 0 {
				t.Fatal(res.Errors)
			}
			var conn struct {
				Edges []struct {
					Node struct {
						Status     string
						NextAction *struct{ Type string }
					}
				}
			}
			if err := json.Unmarshal(res.Data["payments"], &conn); err != nil {
				t.Fatal(err)
			}
			waiting := 0
			for _, e := range conn.Edges {
				if e.Node.Status == "PENDING" && e.Node.NextAction != nil {
					waiting++
				}
			}
			if len(conn.Edges) != n+1 || waiting != n {
				t.Fatalf("%d payments, %d pending with a next action; want %d and %d: %s", len(conn.Edges), waiting, n+1, n, res.Data["payments"])
			}
			if got := reads.take(); got["async"] != 1 {
				t.Errorf("a page of %d waiting payments read next actions %d times, want once: %v", n, got["async"], got)
			}
		})
	}
}

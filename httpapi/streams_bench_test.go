package httpapi_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/httpapi"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/internal/streamtest"
	"github.com/cmpay/cmpay/payments"
	"github.com/cmpay/cmpay/processor"
	"github.com/cmpay/cmpay/processor/sandbox"
)

// BenchmarkReplay replays, over SSE, every event of 100 card payments
// (authorized, captured, refunded: 300 events) with each event's payment
// and its lists (streamQuery): the cost of a subscription resumed with
// `after`. It reports the list reads and the heap the open stream holds
// once every event is delivered (after a GC; the in-process server's
// other live memory is in the baseline). docs/benchmarks/2026-12-07-streams.md
// has the figures.
func BenchmarkReplay(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			db, reads := countedDB(b, dialect)
			bundle, ev, svc := setupEventsB(b, db)
			const n = 100
			ctx := context.Background()
			no := false
			for i := range n {
				p, err := svc.Create(ctx, payments.CreateRequest{ClientID: "shop-bench", Amount: "10", Currency: "BRL",
					Method: payments.MethodCreditCard, IdempotencyKey: fmt.Sprintf("bench-%d", i), Capture: &no})
				if err != nil {
					b.Fatal(err)
				}
				eight, three := "8", "3"
				if _, err := svc.Capture(ctx, payments.CaptureRequest{PaymentID: p.Payment.ID, Amount: &eight, IdempotencyKey: fmt.Sprintf("bench-%d-cap", i)}); err != nil {
					b.Fatal(err)
				}
				if _, err := svc.Refund(ctx, payments.RefundRequest{PaymentID: p.Payment.ID, Amount: &three, IdempotencyKey: fmt.Sprintf("bench-%d-r", i)}); err != nil {
					b.Fatal(err)
				}
			}
			ev.Wake()
			waitNumbered(b, ev, 3*n)
			reads.take()
			var retained uint64
			b.ResetTimer()
			for range b.N {
				retained += replayAll(b, bundle, 3*n)
			}
			b.StopTimer()
			total := 0
			for _, c := range reads.take() {
				total += c
			}
			b.ReportMetric(float64(total)/float64(b.N), "list-reads/op")
			b.ReportMetric(float64(retained)/float64(b.N), "stream-heap-B/op")
		})
	}
}

// replayAll reads a stream of every event from the first, and returns how
// much more heap is live while it is open, all delivered, than before it.
func replayAll(b *testing.B, bundle *bundle, events int) uint64 {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before := liveHeap()
	stream, err := streamtest.DialSSE(ctx, bundle.srv.Client(), bundle.srv.URL, "Bearer "+token, streamQuery, map[string]any{"after": "0"})
	if err != nil {
		b.Fatal(err)
	}
	defer stream.Close()
	for i := range events {
		if event, data, err := stream.Next(); err != nil || event != "next" {
			b.Fatalf("event %d: %s %s %v", i, event, data, err)
		}
	}
	b.StopTimer()
	after := liveHeap()
	b.StartTimer()
	if after < before {
		return 0
	}
	return after - before
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// setupEventsB is setupEvents for benchmarks: it also returns the events
// and payments services.
func setupEventsB(tb testing.TB, db dbtest.DB) (*bundle, *events.Service, *payments.Service) {
	tb.Helper()
	quiet := slog.New(slog.DiscardHandler)
	ev, err := events.New(db.Gorm, events.Options{Logger: quiet, Poll: 100 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	svc, err := payments.NewService(db.Gorm, payments.Config{OnAttempt: func(payments.Operation, payments.Outcome, string) { ev.Wake() }})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ev.Run(ctx); close(done) }()
	tb.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(10 * time.Second)
	for !ev.Leader() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return setupB(tb, db, func(d *httpapi.Deps) { d.Service, d.Events = svc, ev }), ev, svc
}

// BenchmarkListWaitingPix lists 100 waiting Pix and boleto payments with
// their next actions (payments(first: 100)) through the whole in-process
// handler, and reports the next-action reads each listing makes.
func BenchmarkListWaitingPix(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			db, reads := countedDB(b, dialect)
			cfg := processor.DefaultConfig()
			cfg.SandboxMethods = processor.SandboxAsync
			svc, err := payments.NewService(db.Gorm, payments.Config{Processor: sandbox.New(cfg)})
			if err != nil {
				b.Fatal(err)
			}
			bundle := setupB(b, db, func(d *httpapi.Deps) { d.Service = svc })
			for i := range 100 {
				method := payments.MethodPix
				if i%2 == 1 {
					method = payments.MethodBoleto
				}
				if _, err := svc.Create(context.Background(), payments.CreateRequest{ClientID: "shop-bench", Amount: "10",
					Currency: "BRL", Method: method, IdempotencyKey: fmt.Sprintf("wait-%d", i)}); err != nil {
					b.Fatal(err)
				}
			}
			body := `{"query":"{ payments(first: 100) { edges { node { id status nextAction { type pixCode boletoLine expiresAt } paidAt expiredAt } } } }"}`
			reads.take()
			b.ResetTimer()
			for range b.N {
				req := httptest.NewRequest("POST", "/graphql", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+token)
				rec := httptest.NewRecorder()
				bundle.handler.ServeHTTP(rec, req)
				if rec.Code != 200 || strings.Count(rec.Body.String(), `"expiresAt"`) != 100 {
					b.Fatalf("%d %.300s", rec.Code, rec.Body.String())
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(reads.take()["async"])/float64(b.N), "next-action-reads/op")
		})
	}
}

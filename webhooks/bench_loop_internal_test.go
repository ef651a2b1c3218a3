package webhooks

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cmpay/cmpay/events"
	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// BenchmarkDispatchLoop measures the database work of the dispatcher's
// loop alone, which is what bounds how fast one instance drains a
// backlog: over 5,000 due deliveries to an endpoint known to answer
// quickly, it claims 64 at a time and builds their bodies until none is
// left, and makes no attempt. It reports the median claim and bodies
// times and the whole loop's; without the receiver, the attempts and
// their records, these move less with the machine's load than
// BenchmarkDeliveryRate does.
//
//	go test -run '^$' -bench DispatchLoop -benchtime 1x ./webhooks/
func BenchmarkDispatchLoop(b *testing.B) {
	for range b.N {
		dispatchLoop(b, 5000)
	}
}

func dispatchLoop(b *testing.B, n int) {
	b.StopTimer()
	s := serviceWithBacklog(b, n)
	var claims, bodies []time.Duration
	b.StartTimer()
	start := time.Now()
	for {
		t0 := time.Now()
		batch, err := s.claim(b.Context(), 64)
		if err != nil {
			b.Fatal(err)
		}
		if len(batch) == 0 {
			break
		}
		t1 := time.Now()
		if out, err := s.bodies(b.Context(), batch); err != nil || len(out) != len(batch) {
			b.Fatalf("bodies: %d of %d, %v", len(out), len(batch), err)
		}
		claims, bodies = append(claims, t1.Sub(t0)), append(bodies, time.Since(t1))
	}
	took := time.Since(start)
	b.StopTimer()
	if len(claims)*64 < n {
		b.Fatalf("%d claims for %d deliveries", len(claims), n)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(took), "loop-ms")
	b.ReportMetric(ms(median(claims)), "claim-ms")
	b.ReportMetric(ms(median(bodies)), "bodies-ms")
}

// serviceWithBacklog is a Service on a fresh PostgreSQL database with n due
// deliveries of Pix payments (captured at once by the sandbox) to one
// endpoint that answered quickly last time, as an endpoint is in a drain.
func serviceWithBacklog(b *testing.B, n int) *Service {
	db := dbtest.Postgres(b)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ev, err := events.New(db.Gorm, events.Options{Logger: quiet, Poll: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	pay, err := payments.NewService(db.Gorm, payments.Config{OnAttempt: func(payments.Operation, payments.Outcome, string) { ev.Wake() }})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(db.Gorm, ev, Config{AllowPrivate: true, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ev.Run(ctx); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	ep, _, err := s.CreateEndpoint(b.Context(), "", "http://127.0.0.1:9/", nil)
	if err != nil {
		b.Fatal(err)
	}
	s.busy.begin(claim{EndpointID: ep.ID})(answeredFast)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				_, err := pay.Create(context.Background(), payments.CreateRequest{ClientID: "shop-1", IdempotencyKey: fmt.Sprint("loop-", i),
					Amount: "10.00", Currency: "BRL", Method: payments.MethodPix, Origin: payments.Origin{Transport: "test"}})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var c int64
		if err := db.Gorm.Table("webhook_deliveries").Count(&c).Error; err != nil {
			b.Fatal(err)
		}
		if c == int64(n) {
			return s
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d deliveries created within a minute", c, n)
		}
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

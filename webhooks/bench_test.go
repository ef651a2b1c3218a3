package webhooks_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/webhooks"
)

// BenchmarkDeliveryRate measures how fast one instance delivers a backlog
// of events to a local receiver that answers 204 at once: 5,000 payments
// are created first, then the dispatcher starts, and the clock runs until
// the receiver has them all. The figure it reports, events/s, is what one
// instance keeps up with (PostgreSQL, the default concurrency of 64).
//
//	go test -run '^$' -bench DeliveryRate -benchtime 1x ./webhooks/
func BenchmarkDeliveryRate(b *testing.B) {
	for range b.N {
		deliveryRate(b, 5000)
	}
}

func deliveryRate(b *testing.B, n int) {
	b.StopTimer()
	db := dbtest.Postgres(b)
	e := newEnv(b, db, webhooks.Config{AllowPrivate: true})
	var got atomic.Int64
	seen := sync.Map{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, dup := seen.LoadOrStore(r.Header.Get(webhooks.HeaderEventID), true); !dup {
			got.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	if _, _, err := e.wh.CreateEndpoint(b.Context(), "", rcv.URL, nil); err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				e.create(b, "shop-1", fmt.Sprintf("rate-%d", i))
			}
		})
	}
	wg.Wait()
	waitFor(b, time.Minute, "every delivery created", func() bool {
		var c int64
		db.Gorm.Table("webhook_deliveries").Count(&c)
		return c == int64(n)
	})
	b.StartTimer()
	start := time.Now()
	stop := run(b, e.wh.Run)
	waitFor(b, 5*time.Minute, "every event delivered", func() bool { return got.Load() == int64(n) })
	took := time.Since(start)
	b.StopTimer()
	stop()
	b.ReportMetric(float64(n)/took.Seconds(), "events/s")
}

package webhooks_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
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

// BenchmarkDeliveryKeepsUp creates payments at 1,000 a second for five
// seconds through the domain (16 writers), with the dispatcher running and
// a local receiver, and reports the delivery lag (from the event to its
// arrival at the receiver): steady when delivery keeps up, growing when it
// does not.
//
//	go test -run '^$' -bench DeliveryKeepsUp -benchtime 1x ./webhooks/
func BenchmarkDeliveryKeepsUp(b *testing.B) {
	for range b.N {
		keepUp(b, 1000, 5*time.Second)
	}
}

func keepUp(b *testing.B, perSecond int, d time.Duration) {
	db := dbtest.Postgres(b)
	e := newEnv(b, db, webhooks.Config{AllowPrivate: true})
	var mu sync.Mutex
	var lags []time.Duration
	seen := map[string]bool{}
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body webhooks.Body
		if err := json.NewDecoder(r.Body).Decode(&body); err == nil {
			at, _ := time.Parse(time.RFC3339Nano, body.CreatedAt)
			mu.Lock()
			if !seen[body.ID] {
				seen[body.ID] = true
				lags = append(lags, time.Since(at))
			}
			mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	if _, _, err := e.wh.CreateEndpoint(b.Context(), "", rcv.URL, nil); err != nil {
		b.Fatal(err)
	}
	run(b, e.wh.Run)
	n := perSecond * int(d/time.Second)
	keys := make(chan int, n)
	start := time.Now()
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range keys {
				e.create(b, "shop-1", fmt.Sprintf("keep-%d", i))
			}
		})
	}
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(perSecond))))
		keys <- i
	}
	close(keys)
	wg.Wait()
	sent := time.Since(start)
	waitFor(b, time.Minute, "every event delivered", func() bool { mu.Lock(); defer mu.Unlock(); return len(lags) == n })
	slices.Sort(lags)
	b.ReportMetric(float64(n)/sent.Seconds(), "events/s")
	b.ReportMetric(float64(lags[len(lags)/2].Milliseconds()), "p50-lag-ms")
	b.ReportMetric(float64(lags[len(lags)*99/100].Milliseconds()), "p99-lag-ms")
	b.ReportMetric(float64(lags[len(lags)-1].Milliseconds()), "max-lag-ms")
}

package payments_test

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/cmpay/cmpay/internal/dbtest"
	"github.com/cmpay/cmpay/payments"
)

// BenchmarkCreate is the domain's create against a real database, one
// goroutine: its latency is the database round trips plus the Go work.
func BenchmarkCreate(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			db := dbtest.Open(b, dialect)
			svc := mustService(b, db.Gorm, payments.Config{})
			b.Run("new-key", func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					if _, err := svc.Create(b.Context(), request("bench", fmt.Sprintf("new-%d", i), "10.50", "BRL", payments.MethodPix)); err != nil {
						b.Fatal(err)
					}
				}
			})
			// Sixteen goroutines at once, as sixteen clients: on
			// PostgreSQL their creates share statements (batch.go), so
			// ns/op, the time per create over all of them, drops well below
			// the one-goroutine latency above.
			b.Run("new-key-16-goroutines", func(b *testing.B) {
				b.ReportAllocs()
				b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
				var n atomic.Int64
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						key := fmt.Sprintf("parallel-%d", n.Add(1))
						if _, err := svc.Create(b.Context(), request("bench", key, "10.50", "BRL", payments.MethodPix)); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
			b.Run("replay", func(b *testing.B) {
				b.ReportAllocs()
				for i := range 100 {
					svc.Create(b.Context(), request("bench", fmt.Sprintf("replay-%d", i), "10.50", "BRL", payments.MethodPix))
				}
				i := 0
				for b.Loop() {
					i++
					if _, err := svc.Create(b.Context(), request("bench", fmt.Sprintf("replay-%d", i%100), "10.50", "BRL", payments.MethodPix)); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/cmpay/cmpay/internal/load"
)

// soak runs mixed traffic (80% new keys, 15% replays, 5% conflicts) at 32
// clients against PostgreSQL for d after a warm-up, sampling the server's
// resident memory, and fails unless there were no unexpected answers, no
// key has two payments, and memory at the end is within 20% of memory
// after the warm-up.
func soak(serverURL, binary string, d time.Duration) bool {
	const schema = "soak"
	admin, appURL, drop := freshSchema(serverURL, schema)
	defer drop()
	srv := startServer(binary, appURL)
	defer srv.stop()

	cfg := load.Config{URL: srv.url, Token: token, Clients: 32, Mode: load.Mix, SeedKeys: 2000}
	log.Printf("warming up for 30s")
	cfg.RunID, cfg.Measure = "soak-warmup", 30*time.Second
	_, err := load.Run(context.Background(), cfg)
	check(err)
	afterWarmup := srv.rss()

	log.Printf("soaking for %s at 32 clients (RSS after warm-up %.1f MB)", d, float64(afterWarmup)/1024)
	var samples []int64
	var mu sync.Mutex
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				mu.Lock()
				samples = append(samples, srv.rss())
				mu.Unlock()
			}
		}
	}()
	cfg.RunID, cfg.Measure = "soak", d
	res, err := load.Run(context.Background(), cfg)
	close(stop)
	<-done
	check(err)
	atEnd := srv.rss()

	var duplicates int64
	check(admin.Raw(`SELECT COUNT(*) FROM (SELECT 1 FROM ` + schema + `.payments GROUP BY client_id, idempotency_key HAVING COUNT(*) > 1) d`).Scan(&duplicates).Error)
	low, high := afterWarmup, afterWarmup
	for _, s := range samples {
		low, high = min(low, s), max(high, s)
	}
	growth := float64(atEnd-afterWarmup) / float64(afterWarmup)
	ok := res.ErrorCount() == 0 && duplicates == 0 && growth <= 0.20 && growth >= -0.20

	fmt.Printf("Soak %s, %s on %s, commit %s: mixed traffic (80%% new, 15%% replay, 5%% conflict) at 32 clients, PostgreSQL.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), d, machine(), commit())
	fmt.Printf("| requests | requests/s | p50 ms | p99 ms | unexpected answers | keys with two payments | RSS after warm-up | RSS at end | RSS min–max during |\n|---|---|---|---|---|---|---|---|---|\n")
	fmt.Printf("| %d | %.0f | %.2f | %.2f | %d | %d | %.1f MB | %.1f MB (%+.0f%%) | %.1f–%.1f MB |\n\n",
		res.Requests, res.RPS(), ms(res.P50), ms(res.P99), res.ErrorCount(), duplicates,
		float64(afterWarmup)/1024, float64(atEnd)/1024, growth*100, float64(low)/1024, float64(high)/1024)
	fmt.Printf("Answers: %v; unexpected: %v. Verdict: %s.\n", res.Outcomes, res.Errors, map[bool]string{true: "PASS", false: "FAIL"}[ok])
	return ok
}

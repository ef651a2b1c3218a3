package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/internal/stripedouble"
)

// benchWebhookSecret signs the events the intake run posts.
const benchWebhookSecret = "whsec_cmpay_bench"

// eventResult is what the intake run measured.
type eventResult struct {
	posted, failed int
	elapsed        time.Duration
	p50, p99       time.Duration
	cpu            cpuUse // over the measured time
}

// eventRun posts Stripe events to srv's POST /processor/stripe/events from
// *clients senders, each a new event (its own id) about one of the Stripe
// payments the create run left, signed as Stripe signs: each is verified,
// stored once and applied (its payment found, its operations woken, no
// processor read, since a captured card payment has nothing pending).
func eventRun(srv *server, db *gorm.DB) eventResult {
	type target struct{ ID, Ref string }
	var targets []target
	check(db.Raw(`SELECT id, processor_reference AS ref FROM payments WHERE processor = 'stripe' AND processor_reference IS NOT NULL LIMIT 10000`).
		Scan(&targets).Error)
	if len(targets) == 0 {
		log.Fatal("event intake: the create run left no Stripe payment to post events about")
	}
	log.Printf("posting events at %d senders", *clients)
	url := srv.url + "/processor/stripe/events"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *clients}}
	var seq atomic.Int64
	var mu sync.Mutex
	var latencies []time.Duration
	var slow []time.Duration // when, from measureFrom, each answer over 25 ms came
	var failed int
	measureFrom := time.Now().Add(*warmup)
	end := measureFrom.Add(*measure)
	sampled := make(chan cpuSample, 1)
	var profiled <-chan struct{}
	startMeasure := time.AfterFunc(time.Until(measureFrom), func() {
		if srv.debug != "" {
			srv.label = "events"
			profiled = profileServer(srv, *measure)
		}
		sampled <- sampleCPU(srv.cmd.Process.Pid)
	})
	defer startMeasure.Stop()
	var wg sync.WaitGroup
	for range *clients {
		wg.Go(func() {
			for time.Now().Before(end) {
				n := seq.Add(1)
				tg := targets[int(n)%len(targets)]
				body := []byte(fmt.Sprintf(`{"id":"evt_bench_%d","object":"event","created":%d,"type":"payment_intent.succeeded",`+
					`"data":{"object":{"id":%q,"object":"payment_intent","amount":1000,"currency":"brl","status":"succeeded",`+
					`"metadata":{"cmpay_payment_id":%q}}}}`, n, time.Now().Unix(), tg.Ref, tg.ID))
				start := time.Now()
				ok := postEvent(client, url, body)
				took := time.Since(start)
				if start.Before(measureFrom) {
					continue
				}
				mu.Lock()
				latencies = append(latencies, took)
				if took > 25*time.Millisecond {
					slow = append(slow, start.Sub(measureFrom))
				}
				if !ok {
					failed++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	r := eventResult{posted: len(latencies), failed: failed, elapsed: *measure, cpu: (<-sampled).until(sampleCPU(srv.cmd.Process.Pid))}
	if profiled != nil {
		<-profiled
	}
	logSlow(slow)
	log.Printf("event intake: CPU per event: server %.0f µs, PostgreSQL and the rest %.0f µs, load generator %.0f µs; idle %.2f cores",
		perRequest(r.cpu.server, r.posted), perRequest(r.cpu.postgres, r.posted), perRequest(r.cpu.bench, r.posted),
		r.cpu.cores(r.cpu.idle))
	slices.Sort(latencies)
	if len(latencies) > 0 {
		r.p50, r.p99 = latencies[len(latencies)/2], latencies[len(latencies)*99/100]
	}
	return r
}

// logSlow logs how the answers over 25 ms fell across the measured time,
// a count per second, to tell a tail spread evenly from one that comes in
// bursts (a background round, a checkpoint).
func logSlow(slow []time.Duration) {
	perSecond := make([]int, int(measure.Seconds())+1)
	for _, at := range slow {
		if i := int(at.Seconds()); i >= 0 && i < len(perSecond) {
			perSecond[i]++
		}
	}
	log.Printf("event intake: %d answers over 25 ms, per second of the run: %v", len(slow), perSecond)
}

// postEvent posts one signed event and says whether it got a 200; the
// first answer that is not is logged.
func postEvent(client *http.Client, url string, body []byte) bool {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	check(err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", stripedouble.Sign(body, time.Now(), benchWebhookSecret))
	res, err := client.Do(req)
	if err != nil {
		firstFailure.Do(func() { log.Printf("event intake: %v", err) })
		return false
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		answer, _ := io.ReadAll(io.LimitReader(res.Body, 300))
		firstFailure.Do(func() { log.Printf("event intake: %d %s", res.StatusCode, answer) })
		return false
	}
	return true
}

var firstFailure sync.Once

package main

import (
	"fmt"
	"strings"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/load"
	"github.com/cmpay/cmpay/internal/stripedouble"
)

// processorRun measures new-key card creates (pm_card_visa) on PostgreSQL
// through each processor, one after the other on one schema: the sandbox,
// whose answer is known before the commit, and the Stripe connector against
// the in-repo double on loopback, which answers at once. The double runs
// in this process, so the server's CPU is CMPay's own: the connector's
// cost is the second row's server CPU beside the first's.
func processorRun(serverURL, binary string) string {
	_, appURL, drop := freshSchema(serverURL, "bench_processor")
	defer drop()
	db, err := database.Open(appURL, database.Options{})
	check(err)
	defer database.Close(db)
	double := stripedouble.New(stripedouble.Options{})
	defer double.Close()
	runs := []struct {
		name string
		env  []string
	}{
		{"sandbox", nil},
		{"stripe, in-repo double", []string{"PROCESSOR=stripe", "STRIPE_API_KEY=sk_test_bench", "STRIPE_API_BASE=" + double.URL(),
			"STRIPE_WEBHOOK_SECRET=" + benchWebhookSecret}},
	}
	var b strings.Builder
	b.WriteString("### createPayment at the processor (PostgreSQL, card payments with `pm_card_visa`, new keys)\n\n")
	b.WriteString("| processor | requests/s | p50 ms | p99 ms | errors | server CPU µs/request |\n|---|---|---|---|---|---|\n")
	var cpu [2]float64
	var events eventResult
	for i, run := range runs {
		srv := startServer(binary, appURL, run.env...)
		srv.label = []string{"processor-sandbox", "processor-stripe"}[i]
		r := driveWith(srv, load.Config{Mode: load.New, PaymentMethodToken: "pm_card_visa"})
		if i == 1 { // the event intake, on the Stripe payments just made
			events = eventRun(srv, db)
		}
		srv.stop()
		cpu[i] = perRequest(r.cpu.server, r.Requests)
		fmt.Fprintf(&b, "| %s | %.0f | %.2f | %.2f | %d | %.0f |\n", run.name, r.RPS(), ms(r.P50), ms(r.P99), r.ErrorCount(), cpu[i])
	}
	if cpu[0] > 0 {
		fmt.Fprintf(&b, "\nThrough the Stripe connector a create costs the server %.2f× the CPU of the sandbox path "+
			"(the phases: the payment stored PROCESSING, the call, its answer recorded).\n\n", cpu[1]/cpu[0])
	}
	fmt.Fprintf(&b, "Event intake (`POST /processor/stripe/events`, each event signed, verified, stored once and applied to its payment), "+
		"%d senders: %.0f events/s, p50 %.2f ms, p99 %.2f ms, %d not answered 200.\n\n",
		*clients, float64(events.posted)/events.elapsed.Seconds(), ms(events.p50), ms(events.p99), events.failed)
	return b.String()
}

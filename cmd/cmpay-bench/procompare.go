package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/load"
	"github.com/cmpay/cmpay/internal/stripedouble"
)

// The Stripe connector's CPU per create beside the sandbox path's, before
// and after a change. Two pseudo-modes of -against -modes: "card", card
// creates (pm_card_visa, new keys) through the sandbox, and "stripe", the
// same through the Stripe connector against the in-repo double, which runs
// in this process so that the server's CPU is CMPay's own (processor.go).
// Each runs on a server of its own, started with its processor, on the
// round's schema. The report adds each build's stripe ÷ card server CPU,
// round by round: the figure the processors issue sets at most 2. A
// third, "stripe-refund", refunds through the Stripe connector.

const (
	cardSandbox load.Mode = "card"
	cardStripe  load.Mode = "stripe"
	// stripeRefund is the refund mode through the Stripe connector: the
	// phased way (askChange), which the sandbox's foreseen refunds never
	// take. Its payments are card payments the round's server creates
	// through the double first (stripeCaptured); a refund takes 0.01 of
	// one, so each can take a thousand.
	stripeRefund load.Mode = "stripe-refund"
)

// cardToken is the card the card modes pay with: the double and the
// sandbox both approve it.
const cardToken = "pm_card_visa"

// processorModes are the modes that run on a server of their own.
func processorMode(m load.Mode) bool { return m == cardSandbox || m == cardStripe || m == stripeRefund }

// benchDouble is the Stripe double of this run, started on first use.
var benchDouble *stripedouble.Double

// stripeEnv is the environment of a server that pays through the double.
func stripeEnv() []string {
	if benchDouble == nil {
		benchDouble = stripedouble.New(stripedouble.Options{})
	}
	return doubleEnv(benchDouble)
}

// doubleEnv is the environment of a server that pays through d.
func doubleEnv(d *stripedouble.Double) []string {
	return []string{"PROCESSOR=stripe", "STRIPE_API_KEY=sk_test_bench", "STRIPE_API_BASE=" + d.URL(),
		"STRIPE_WEBHOOK_SECRET=" + benchWebhookSecret}
}

// driveProcessorMode starts binary's server on appURL for a card mode,
// drives it and stops it; label names its profile.
func driveProcessorMode(binary, appURL string, mode load.Mode, label string) modeResult {
	var env []string
	var own *stripedouble.Double // stripe-refund's
	switch mode {
	case cardStripe:
		env = stripeEnv()
	case stripeRefund:
		// A double of its own: the double scans every refund it holds on
		// each new one, so refunds of earlier runs would slow later ones.
		own = stripedouble.New(stripedouble.Options{})
		defer own.Close()
		env = doubleEnv(own)
	}
	srv := startServer(binary, appURL, env...)
	srv.label = label
	defer srv.stop()
	if mode == stripeRefund {
		return driveWith(srv, load.Config{Mode: load.Refund, Payments: stripeCaptured(srv, appURL, own)})
	}
	return driveWith(srv, load.Config{Mode: load.New, PaymentMethodToken: cardToken})
}

// stripeCaptured has srv, a server paying through d, create card payments
// (captured) for stripeSeedTime, and returns their ids, read from appURL's
// schema.
func stripeCaptured(srv *server, appURL string, d *stripedouble.Double) []string {
	label := srv.label
	srv.label = label + "-seed"
	driveWith(srv, load.Config{Mode: load.New, PaymentMethodToken: cardToken, Warmup: 0, Measure: stripeSeedTime})
	srv.label = label
	db, err := database.Open(appURL, database.Options{})
	check(err)
	defer database.Close(db)
	var ids []string
	check(db.Raw(`SELECT id FROM payments WHERE processor = 'stripe' AND status = 'CAPTURED'`).Scan(&ids).Error)
	ids = madeThrough(d, ids)
	if len(ids) == 0 {
		log.Fatalf("%s: no card payment was captured through the double to refund", label)
	}
	log.Printf("%s: %d payments captured through the double to refund", label, len(ids))
	return ids
}

// madeThrough keeps the ids of the payments d holds an intent for. The
// round's schema also holds the card payments the "stripe" mode made
// through another double, which this one answers as missing: refunds of
// those would fail fast, and be measured.
func madeThrough(d *stripedouble.Double, ids []string) []string {
	return slices.DeleteFunc(ids, func(id string) bool { return len(d.IntentsFor(id)) == 0 })
}

// stripeSeedTime is how long stripeCaptured creates: a few hundred
// payments even on a busy machine, room for over 100,000 refunds.
const stripeSeedTime = 2 * time.Second

// processorRatios is the part of the report on the card modes: each
// build's median server CPU per create in each, and stripe ÷ card, as the
// ratio of the medians and as the median of each round's.
func processorRatios(runs []compareRun) string {
	server := map[string]map[load.Mode][]float64{"before": {}, "after": {}}
	perRound := map[string]map[int]map[load.Mode]float64{"before": {}, "after": {}}
	for _, c := range runs {
		if !processorMode(c.mode) {
			continue
		}
		us := perRequest(c.r.cpu.server, c.r.Requests)
		server[c.build][c.mode] = append(server[c.build][c.mode], us)
		if perRound[c.build][c.round] == nil {
			perRound[c.build][c.round] = map[load.Mode]float64{}
		}
		perRound[c.build][c.round][c.mode] = us
	}
	if len(server["before"][cardStripe]) == 0 || len(server["before"][cardSandbox]) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| build | median server µs per card create, sandbox | through Stripe | stripe ÷ sandbox, medians | median of each round's stripe ÷ sandbox |\n" +
		"|---|---|---|---|---|\n")
	for _, build := range []string{"before", "after"} {
		var ratios []float64
		for _, m := range perRound[build] {
			if m[cardSandbox] > 0 && m[cardStripe] > 0 {
				ratios = append(ratios, m[cardStripe]/m[cardSandbox])
			}
		}
		card, stripe := median(server[build][cardSandbox]), median(server[build][cardStripe])
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.2f | %.2f |\n", build, card, stripe, stripe/card, median(ratios))
	}
	b.WriteString("\n")
	return b.String()
}

// debugAddr is a free loopback address for a server's DEBUG_ADDR.
func debugAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer ln.Close()
	return ln.Addr().String()
}

// profileServer takes a CPU profile of srv for d into -cpuprofile's
// directory, named by srv's label, and says when it is written.
func profileServer(srv *server, d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		secs := max(1, int(d.Round(time.Second).Seconds()))
		resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", srv.debug, secs))
		if err != nil {
			log.Printf("profile of %s: %v", srv.label, err)
			return
		}
		defer resp.Body.Close()
		path := filepath.Join(*cpuProfile, srv.label+".pprof")
		f, err := os.Create(path)
		check(err)
		defer f.Close()
		if _, err := io.Copy(f, resp.Body); err != nil {
			log.Printf("profile of %s: %v", srv.label, err)
			return
		}
		log.Printf("profile written to %s", path)
	}()
	return done
}

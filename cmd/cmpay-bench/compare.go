package main

import (
	"fmt"
	"log"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/load"
)

// Before and after. On a shared machine a run's figures move by a third
// with the neighbours, so two builds measured one after the other can seem
// a third apart when they are equal, or equal when they are not. -against
// alternates this build's server with another build's under the same
// load, each on a fresh schema it migrates itself, and reports both, round
// by round and as medians. The order changes every round (before, after;
// after, before; …), so that whatever favours the first or the second
// server of a round, it favours each build as often; and each round's
// after ÷ before is reported too, whose median follows the machine's slow
// drift less than the ratio of the two medians does.
//
// Beside requests per second it reports the CPU each request cost the
// server and PostgreSQL, divided by what it cost the load generator: the
// load generator runs the same code against both builds, so when the
// machine slows down all three rise together and the quotient moves less
// than either of them.

// compareModes are the createPayment modes compared: by default new keys
// and replays, of which the mix is made; -modes names others (conflict,
// mix) for a change that treats them apart, or capture and refund, run on
// payments stored for them in the round's schema (seedChanges).
var compareModes = []load.Mode{load.New, load.Replay}

// compareRun is one mode of one build in one round.
type compareRun struct {
	round int
	build string
	mode  load.Mode
	r     modeResult
}

// cost is the server's and PostgreSQL's CPU per request over the load
// generator's.
func (c compareRun) cost() float64 {
	if c.r.cpu.bench <= 0 {
		return 0
	}
	return float64(c.r.cpu.server+c.r.cpu.postgres) / float64(c.r.cpu.bench)
}

// compare alternates the servers of binary (this build, or -after's, named
// afterName in the report) and against for rounds rounds, and returns the
// report. An odd number of rounds is raised by one: roundOrder puts each
// build first in every other round.
func compare(serverURL, binary, afterName, against string, rounds int) string {
	if rounds%2 == 1 {
		rounds++
		log.Printf("running %d rounds, so that each build runs first as often", rounds)
	}
	path := map[string]string{"before": against, "after": binary}
	var runs []compareRun
	for round := 1; round <= rounds; round++ {
		for _, build := range roundOrder(round) {
			schema := fmt.Sprintf("compare_%s_%d", build, round)
			_, appURL, drop := freshSchema(serverURL, schema)
			var srv *server                    // the one of the plain modes, started on first use
			var changes map[load.Mode][]string // what capture and refund act on, stored on first use
			for _, mode := range compareModes {
				label := fmt.Sprintf("%s-%d-%s", build, round, mode)
				var r modeResult
				switch {
				case processorMode(mode):
					r = driveProcessorMode(path[build], appURL, mode, label)
				case changeMode(mode):
					if changes == nil {
						srv, changes = seedChanges(srv, path[build], appURL)
					}
					srv.label = label
					r = drive(srv, mode, changes[mode])
				default:
					if srv == nil {
						srv = startServer(path[build], appURL)
					}
					srv.label = label
					r = drive(srv, mode, nil)
				}
				log.Printf("round %d, %s, %s: %.0f requests/s, server %.0f µs/request", round, build, mode, r.RPS(),
					perRequest(r.cpu.server, r.Requests))
				runs = append(runs, compareRun{round: round, build: build, mode: mode, r: r})
			}
			if srv != nil {
				srv.stop()
			}
			drop()
		}
	}
	return compareReport(runs, binaryName(against), afterName)
}

// changeMode: capture and refund act on payments stored for them.
func changeMode(m load.Mode) bool { return m == load.Capture || m == load.Refund }

// seedChanges stores the payments capture and refund act on in appURL's
// schema, as the benchmark does (-capture-rate authorizations a second of
// warm-up and run, refundPayments captured payments), once binary's server
// has migrated it, and returns a server started afresh on them, as the
// benchmark's is; srv, if not nil, is stopped first.
func seedChanges(srv *server, binary, appURL string) (*server, map[load.Mode][]string) {
	if srv == nil {
		srv = startServer(binary, appURL) // migrates the schema
	}
	srv.stop()
	db, err := database.Open(appURL, database.Options{})
	check(err)
	defer database.Close(db)
	changes := map[load.Mode][]string{
		load.Capture: ids(db, load.Capture, "pay_cap_", int(float64(*maxRate)*(*warmup+*measure).Seconds())),
		load.Refund:  ids(db, load.Refund, "pay_ref_", refundPayments),
	}
	check(db.Exec(`VACUUM ANALYZE`).Error)
	return startServer(binary, appURL), changes
}

// binaryName is how the report names a server binary given by its path.
func binaryName(path string) string { return "`" + filepath.Base(path) + "`" }

// roundOrder is which build runs first in a round: before in odd rounds,
// after in even ones.
func roundOrder(round int) []string { return inTurn(round, []string{"before", "after"}) }

// compareReport is the report of runs; beforeName and afterName say what
// the two builds were.
func compareReport(runs []compareRun, beforeName, afterName string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Before: %s; after: %s. Each build on an empty schema it migrated itself, "+
		"alternated round by round, the first of each round in turn; %d clients, %s per mode after %s of warm-up. "+
		"CPU in µs per request; cost = (server + PostgreSQL) ÷ load generator.\n\n",
		beforeName, afterName, *clients, *measure, *warmup)
	b.WriteString("| round | build | mode | requests/s | p99 ms | server | PostgreSQL | load generator | cost |\n" +
		"|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range runs {
		fmt.Fprintf(&b, "| %d | %s | %s | %.0f | %.2f | %.0f | %.0f | %.0f | %.2f |\n", c.round, c.build, c.mode,
			c.r.RPS(), ms(c.r.P99), perRequest(c.r.cpu.server, c.r.Requests), perRequest(c.r.cpu.postgres, c.r.Requests),
			perRequest(c.r.cpu.bench, c.r.Requests), c.cost())
	}
	b.WriteString("\n| mode | median requests/s, before | after | after ÷ before | median of each round's after ÷ before | " +
		"median cost, before | after | after ÷ before | median of each round's after ÷ before |\n" +
		"|---|---|---|---|---|---|---|---|---|\n")
	for _, mode := range compareModes {
		rps := map[string][]float64{}
		cost := map[string][]float64{}
		// byRound pairs each round's before with its after.
		byRound := map[int]map[string]compareRun{}
		for _, c := range runs {
			if c.mode == mode {
				rps[c.build] = append(rps[c.build], c.r.RPS())
				cost[c.build] = append(cost[c.build], c.cost())
				if byRound[c.round] == nil {
					byRound[c.round] = map[string]compareRun{}
				}
				byRound[c.round][c.build] = c
			}
		}
		var rpsRatios, costRatios []float64
		for _, pair := range byRound {
			before, okB := pair["before"]
			after, okA := pair["after"]
			if !okB || !okA || before.r.RPS() == 0 || before.cost() == 0 {
				continue
			}
			rpsRatios = append(rpsRatios, after.r.RPS()/before.r.RPS())
			costRatios = append(costRatios, after.cost()/before.cost())
		}
		rb, ra := median(rps["before"]), median(rps["after"])
		cb, ca := median(cost["before"]), median(cost["after"])
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n",
			mode, rb, ra, ra/rb, median(rpsRatios), cb, ca, ca/cb, median(costRatios))
	}
	b.WriteString("\n")
	b.WriteString(processorRatios(runs))
	return b.String()
}

// median of xs; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

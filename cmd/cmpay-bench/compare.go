package main

import (
	"fmt"
	"log"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cmpay/cmpay/internal/load"
)

// Before and after. On a shared machine a run's figures move by a third
// with the neighbours, so two builds measured one after the other can seem
// a third apart when they are equal, or equal when they are not. -against
// alternates this build's server with another build's (before, after,
// before, after, …) under the same load, each on a fresh schema it
// migrates itself, and reports both, round by round and as medians.
//
// Beside requests per second it reports the CPU each request cost the
// server and PostgreSQL, divided by what it cost the load generator: the
// load generator runs the same code against both builds, so when the
// machine slows down all three rise together and the quotient moves less
// than either of them.

// compareModes are the createPayment modes compared: the mix and the
// conflict mode are made of the same requests.
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

// compare alternates the servers of binary (this build) and against for
// rounds rounds, and returns the report.
func compare(serverURL, binary, against string, rounds int) string {
	builds := []struct{ name, path string }{{"before", against}, {"after", binary}}
	var runs []compareRun
	for round := 1; round <= rounds; round++ {
		for _, b := range builds {
			schema := fmt.Sprintf("compare_%s_%d", b.name, round)
			_, appURL, drop := freshSchema(serverURL, schema)
			srv := startServer(b.path, appURL)
			for _, mode := range compareModes {
				r := drive(srv, mode, nil)
				log.Printf("round %d, %s, %s: %.0f requests/s", round, b.name, mode, r.RPS())
				runs = append(runs, compareRun{round: round, build: b.name, mode: mode, r: r})
			}
			srv.stop()
			drop()
		}
	}
	return compareReport(runs, against)
}

func compareReport(runs []compareRun, against string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Before: `%s`; after: this checkout (%s). Each build on an empty schema it migrated itself, "+
		"alternated round by round; %d clients, %s per mode after %s of warm-up. CPU in µs per request; "+
		"cost = (server + PostgreSQL) ÷ load generator.\n\n", filepath.Base(against), commit(), *clients, *measure, *warmup)
	b.WriteString("| round | build | mode | requests/s | p99 ms | server | PostgreSQL | load generator | cost |\n" +
		"|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range runs {
		fmt.Fprintf(&b, "| %d | %s | %s | %.0f | %.2f | %.0f | %.0f | %.0f | %.2f |\n", c.round, c.build, c.mode,
			c.r.RPS(), ms(c.r.P99), perRequest(c.r.cpu.server, c.r.Requests), perRequest(c.r.cpu.postgres, c.r.Requests),
			perRequest(c.r.cpu.bench, c.r.Requests), c.cost())
	}
	b.WriteString("\n| mode | median requests/s, before | after | after ÷ before | median cost, before | after | after ÷ before |\n" +
		"|---|---|---|---|---|---|---|\n")
	for _, mode := range compareModes {
		rps := map[string][]float64{}
		cost := map[string][]float64{}
		for _, c := range runs {
			if c.mode == mode {
				rps[c.build] = append(rps[c.build], c.r.RPS())
				cost[c.build] = append(cost[c.build], c.cost())
			}
		}
		rb, ra := median(rps["before"]), median(rps["after"])
		cb, ca := median(cost["before"]), median(cost["after"])
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f |\n", mode, rb, ra, ra/rb, cb, ca, ca/cb)
	}
	b.WriteString("\n")
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

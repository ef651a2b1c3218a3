package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/load"
)

// Flat from 10,000 to 1,000,000 stored payments. Two runs of one mode a few
// minutes apart on this shared machine differ by more than the data size
// makes them differ, so the create modes are not measured at one size and
// then at the other: once every size's schema is stored, each mode runs in
// short rounds at each size in turn, the smaller first in odd rounds and
// the larger in even ones, and each round's rate at the largest size over
// its rate at the smallest is a ratio taken a few seconds apart. Their
// median, and their spread, say whether the rate is flat.
//
// Each run has a server started afresh on its schema, as -against does, so
// that its peak RSS is its own. A create with a new key adds a payment: a
// round adds a few per cent to a million payments, which keeps them (the
// report gives how many were stored at each run's start), but several
// times 10,000, so a schema smaller than reseedBelow is stored afresh
// before each run.

var (
	flatRounds  = flag.Int("flat-rounds", 4, "how many alternated rounds each create mode runs at each size (even: an odd number is raised by one)")
	flatMeasure = flag.Duration("flat-duration", 6*time.Second, "how long each alternated round of a create mode is measured")
	flatWarmup  = flag.Duration("flat-warmup", 2*time.Second, "traffic sent before measuring each alternated round")
)

// flatModes are the modes measured in alternated rounds: the create modes.
// Captures and refunds act on payments stored for them, which would add
// hundreds of thousands of authorizations to the smaller schema; they run
// once per size afterwards (postgresRun).
var flatModes = []load.Mode{load.New, load.Replay, load.Conflict, load.Mix}

// reseedBelow: a schema of fewer payments than this is stored afresh before
// each alternated run; it takes a second or two.
const reseedBelow = 100_000

// storedSchema is a schema with n seeded payments, open.
type storedSchema struct {
	n                 int
	serverURL, schema string
	appURL            string
	db                *gorm.DB
	drop              func()
	used              bool // a run has added to it since it was seeded
}

// storeSchema creates a schema named after n, migrates it and seeds n
// payments (seed).
func storeSchema(serverURL string, n int) *storedSchema {
	st := &storedSchema{n: n, serverURL: serverURL, schema: fmt.Sprintf("bench_%d", n)}
	st.store()
	return st
}

// store (re)creates the schema and seeds it.
func (st *storedSchema) store() {
	st.close()
	_, appURL, drop := freshSchema(st.serverURL, st.schema)
	db, err := database.Open(appURL, database.Options{})
	check(err)
	check(database.Migrate(db))
	start := time.Now()
	seed(db, st.n)
	log.Printf("seeded %d payments in %s in %s", st.n, st.schema, time.Since(start).Round(time.Second))
	st.appURL, st.db, st.drop, st.used = appURL, db, drop, false
}

// close closes the schema's connection and drops it.
func (st *storedSchema) close() {
	if st.db == nil {
		return
	}
	check(database.Close(st.db))
	st.drop()
	st.db = nil
}

// payments is how many payments the schema holds.
func (st *storedSchema) payments() int {
	var n int
	check(st.db.Raw(`SELECT COUNT(*) FROM payments`).Scan(&n).Error)
	return n
}

// maintenance is how many times autovacuum has vacuumed or analyzed the
// schema's tables: logged for each run, since a run that meets it pays
// for it.
func (st *storedSchema) maintenance() int {
	var n int
	check(st.db.Raw(`SELECT COALESCE(SUM(autovacuum_count + autoanalyze_count), 0) FROM pg_stat_user_tables
		WHERE schemaname = current_schema()`).Scan(&n).Error)
	return n
}

// flatRun is one mode at one size in one round.
type flatRun struct {
	round  int
	size   int
	mode   load.Mode
	stored int // payments in the schema when the run started
	r      modeResult
}

// flatStep is one run of the alternated rounds.
type flatStep struct {
	round int
	mode  load.Mode
	size  int
}

// flatSchedule is the order of the runs: round by round, each mode at every
// size back to back, the sizes inTurn (smallest first in odd rounds). An
// odd number of rounds is raised by one, so that each size runs first as
// often.
func flatSchedule(rounds int, sizes []int) []flatStep {
	rounds += rounds % 2
	var steps []flatStep
	for round := 1; round <= rounds; round++ {
		for _, mode := range flatModes {
			for _, n := range inTurn(round, sizes) {
				steps = append(steps, flatStep{round: round, mode: mode, size: n})
			}
		}
	}
	return steps
}

// inTurn is the order of xs in a round: as given in odd rounds, reversed
// in even ones, so that each runs first as often over an even number of
// rounds (the sizes here, the two builds in compare).
func inTurn[T any](round int, xs []T) []T {
	out := slices.Clone(xs)
	if round%2 == 0 {
		slices.Reverse(out)
	}
	return out
}

// alternate runs flatSchedule over the stored schemas, and returns every
// run.
func alternate(schemas []*storedSchema, binary string, rounds int) []flatRun {
	bySize := map[int]*storedSchema{}
	var sizes []int
	for _, st := range schemas {
		bySize[st.n] = st
		sizes = append(sizes, st.n)
	}
	var runs []flatRun
	for _, step := range flatSchedule(rounds, sizes) {
		st := bySize[step.size]
		if st.used && st.n < reseedBelow {
			st.store()
		}
		stored, maintained := st.payments(), st.maintenance()
		srv := startServer(binary, st.appURL)
		srv.label = fmt.Sprintf("flat-%d-%d-%s", st.n, step.round, step.mode)
		r := driveWith(srv, load.Config{Mode: step.mode, Warmup: *flatWarmup, Measure: *flatMeasure})
		srv.stop()
		st.used = true
		log.Printf("round %d, %s payments, %s: %.0f requests/s, µs/request: server %.0f, PostgreSQL %.0f "+
			"(machine less the others %.0f), load generator %.0f; autovacuum passes %d; load average %s", step.round,
			thousands(stored), step.mode, r.RPS(), perRequest(r.cpu.server, r.Requests), perRequest(pgCPU(r), r.Requests),
			perRequest(r.cpu.postgres, r.Requests), perRequest(r.cpu.bench, r.Requests), st.maintenance()-maintained, loadAverage())
		runs = append(runs, flatRun{round: step.round, size: st.n, mode: step.mode, stored: stored, r: r})
	}
	return runs
}

// pooled is a mode's runs at one size taken together, for the size's
// table: all their requests over all their measured time, the median p50,
// the highest p99 and peak RSS, every error, and the CPU of them all.
func pooled(runs []flatRun, size int, mode load.Mode) modeResult {
	out := modeResult{Result: load.Result{Mode: mode, Errors: map[string]int{}}}
	var p50s []float64
	for _, f := range runs {
		if f.size != size || f.mode != mode {
			continue
		}
		out.Requests += f.r.Requests
		out.Elapsed += f.r.Elapsed
		p50s = append(p50s, float64(f.r.P50))
		out.P99 = max(out.P99, f.r.P99)
		out.peakRSS = max(out.peakRSS, f.r.peakRSS)
		for k, v := range f.r.Errors {
			out.Errors[k] += v
		}
		c := &out.cpu
		c.elapsed += f.r.cpu.elapsed
		c.server += f.r.cpu.server
		c.postgres += f.r.cpu.postgres
		c.bench += f.r.cpu.bench
		c.pgOwn += f.r.cpu.pgOwn
		c.idle += f.r.cpu.idle
	}
	out.P50 = time.Duration(median(p50s))
	return out
}

// flatMode is what the rounds say of one mode between the smallest and
// the largest size.
type flatMode struct {
	mode                 load.Mode
	small, large         float64   // median requests/s
	ratios               []float64 // each round's large ÷ small, in round order
	ratio, low, high     float64   // their median, least and greatest
	serverS, serverL     float64   // median server µs per request
	postgresS, postgresL float64   // median PostgreSQL µs per request (pgCPU)
	// cpuRatios are each round's server and PostgreSQL CPU per request at
	// large over small; cpuRatio their median.
	cpuRatios []float64
	cpuRatio  float64
}

// pgCPU is PostgreSQL's CPU in a run: its processes' own time when the
// postmaster was found, else the machine's busy time less the others'.
func pgCPU(r modeResult) time.Duration {
	if r.cpu.pgOwn > 0 {
		return r.cpu.pgOwn
	}
	return r.cpu.postgres
}

// cpuPerRequest is the server's and PostgreSQL's CPU per request, in µs.
func cpuPerRequest(r modeResult) float64 { return perRequest(r.cpu.server+pgCPU(r), r.Requests) }

// summarize pairs each round's run of mode at small with its run at large.
func summarize(runs []flatRun, mode load.Mode, small, large int) flatMode {
	out := flatMode{mode: mode}
	byRound := map[int]map[int]modeResult{}
	var rounds []int
	stats := map[int]*[3][]float64{small: {}, large: {}} // rates, server, PostgreSQL
	for _, f := range runs {
		if f.mode != mode || (f.size != small && f.size != large) {
			continue
		}
		if byRound[f.round] == nil {
			byRound[f.round] = map[int]modeResult{}
			rounds = append(rounds, f.round)
		}
		byRound[f.round][f.size] = f.r
		s := stats[f.size]
		s[0] = append(s[0], f.r.RPS())
		s[1] = append(s[1], perRequest(f.r.cpu.server, f.r.Requests))
		s[2] = append(s[2], perRequest(pgCPU(f.r), f.r.Requests))
	}
	slices.Sort(rounds)
	for _, round := range rounds {
		s, okS := byRound[round][small]
		l, okL := byRound[round][large]
		if okS && okL && s.RPS() > 0 {
			out.ratios = append(out.ratios, l.RPS()/s.RPS())
		}
		if okS && okL && cpuPerRequest(s) > 0 {
			out.cpuRatios = append(out.cpuRatios, cpuPerRequest(l)/cpuPerRequest(s))
		}
	}
	out.cpuRatio = median(out.cpuRatios)
	out.small, out.serverS, out.postgresS = median(stats[small][0]), median(stats[small][1]), median(stats[small][2])
	out.large, out.serverL, out.postgresL = median(stats[large][0]), median(stats[large][1]), median(stats[large][2])
	out.ratio = median(out.ratios)
	if len(out.ratios) > 0 {
		out.low, out.high = slices.Min(out.ratios), slices.Max(out.ratios)
	}
	return out
}

// flatBound is the target: the rate at the largest size within 20% of the
// rate at the smallest.
const flatBound = 0.20

func within(ratio float64) bool { return ratio >= 1-flatBound && ratio <= 1+flatBound }

// flatReport is the section of the report on the alternated rounds; load
// is the machine's load average before and after them.
func flatReport(runs []flatRun, sizes []int, loadBefore, loadAfter string) string {
	if len(sizes) < 2 {
		return ""
	}
	small, large := slices.Min(sizes), slices.Max(sizes)
	S, L := thousands(small), thousands(large)
	first, last := 0, 0 // payments stored at the start of the large size's runs
	rounds := 0
	for _, f := range runs {
		rounds = max(rounds, f.round)
		if f.size == large {
			if first == 0 || f.stored < first {
				first = f.stored
			}
			last = max(last, f.stored)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "### Flat from %s to %s stored payments: alternated rounds\n\n", S, L)
	fmt.Fprintf(&b, "Each create mode ran %d rounds at each size, %s measured after %s of warm-up, on a server started afresh "+
		"for each run; the sizes alternated, the smaller first in odd rounds and the larger in even ones, every mode's two runs "+
		"of a round back to back. The %s-payment schema was stored afresh before each run; the %s-payment one kept what the runs "+
		"added (%s to %s payments at a run's start). Each round's ratio is its rate at %s over its rate at %s; the target is "+
		"a median ratio within %.0f%% of 1. CPU in µs per request, medians of the rounds; %s. The CPU ratio is each round's "+
		"server and PostgreSQL CPU per request at %s over that at %s: its median, and its spread. Load average (1, 5, 15 min) "+
		"before the rounds %s, after %s.\n\n",
		rounds, *flatMeasure, *flatWarmup, S, L, thousands(first), thousands(last), L, S, flatBound*100, pgSource(runs), L, S,
		loadBefore, loadAfter)
	fmt.Fprintf(&b, "| mode | requests/s at %s | at %s | each round's ratio | median ratio | spread | "+
		"server at %s | at %s | PostgreSQL at %s | at %s | CPU ratio | flat |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
		S, L, S, L, S, L)
	for _, mode := range flatModes {
		m := summarize(runs, mode, small, large)
		each := make([]string, len(m.ratios))
		in := 0
		for i, r := range m.ratios {
			each[i] = fmt.Sprintf("%.2f", r)
			if within(r) {
				in++
			}
		}
		verdict := "yes"
		if !within(m.ratio) {
			verdict = "**no**"
		}
		cpuSpread := ""
		if len(m.cpuRatios) > 0 {
			cpuSpread = fmt.Sprintf(" (%.2f–%.2f)", slices.Min(m.cpuRatios), slices.Max(m.cpuRatios))
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %s | %.2f | %.2f–%.2f | %.0f | %.0f | %.0f | %.0f | %.2f%s | %s (%d of %d rounds within) |\n",
			mode, m.small, m.large, strings.Join(each, ", "), m.ratio, m.low, m.high, m.serverS, m.serverL, m.postgresS, m.postgresL,
			m.cpuRatio, cpuSpread, verdict, in, len(m.ratios))
	}
	b.WriteString("\n")
	return b.String()
}

// pgSource says where the report's PostgreSQL CPU comes from (pgCPU).
func pgSource(runs []flatRun) string {
	for _, f := range runs {
		if f.r.cpu.pgOwn == 0 {
			return "PostgreSQL's is the machine's busy time less the server's and the load generator's, which holds any other work " +
				"on the machine (its own processes' time was not read)"
		}
	}
	return "PostgreSQL's is its own processes' (the postmaster and its children, those that exited meanwhile included), " +
		"which other work on the machine does not reach"
}

// loadAverage is /proc/loadavg's three averages.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

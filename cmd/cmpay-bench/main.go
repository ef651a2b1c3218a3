// Command cmpay-bench measures CMPay's createPayment, capturePayment and
// refundPayment against what PostgreSQL itself can do on the same machine,
// and writes the figures.
//
// It builds the server from this checkout and seeds a fresh schema for each
// data size. Then it drives the server over loopback with the load
// generator (internal/load) in four create modes (new keys, replays,
// conflicting payloads, and a mix) in short rounds, the sizes alternated
// (flatness.go), each run on a server started for it, whose peak RSS it
// reads. Then, for each size, it runs pgbench at the same concurrency twice
// over: with the least SQL that can do a create's work (the limit), and
// with the server's own statement; it seeds authorizations and captured
// payments and does the same for captures and refunds. The SQLite mode is
// measured too. Run it through scripts/bench.sh, which starts PostgreSQL
// first. With -soak it runs the soak test instead (scripts/soak.sh).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"gorm.io/gorm"

	"github.com/cmpay/cmpay/database"
	"github.com/cmpay/cmpay/internal/load"
)

var (
	measure = flag.Duration("duration", 15*time.Second, "how long each mode and each pgbench run is measured")
	warmup  = flag.Duration("warmup", 3*time.Second, "traffic sent before measuring")
	clients = flag.Int("clients", 16, "concurrent clients, for the load generator and pgbench alike")
	sizes   = flag.String("sizes", "10000,1000000", "payments stored before each run")
	sqlite  = flag.Bool("sqlite", true, "also measure the embedded SQLite mode")
	procs   = flag.Bool("processors", true, "also measure card creates through the sandbox and through the Stripe connector (against the in-repo double)")
	write   = flag.String("write", "", "a Markdown file whose section between the bench markers is replaced by the results")
	against = flag.String("against", "", "instead of the benchmark, alternate this build's server with this other server binary "+
		"under the createPayment modes (scripts/bench-against.sh)")
	rounds = flag.Int("rounds", 6, "with -against: how many times each build runs each mode (even: an odd number is raised by one)")
	modes  = flag.String("modes", "", "with -against: the modes compared, comma-separated (default new,replay; also conflict, mix, capture, refund, card, stripe, stripe-refund)")
	// afterBinary measures two other builds against each other, e.g. a
	// change as it was merged against the commit before it.
	afterBinary = flag.String("after", "", "with -against: this server binary instead of this checkout's build")
	soakFor     = flag.Duration("soak", 0, "instead of the benchmark, soak the server with mixed traffic at 32 clients for this long")
	cpuProfile  = flag.String("cpuprofile", "", "a directory: each server's CPU profile over each measured run is written there "+
		"(the server runs with DEBUG_ADDR; profiling costs the server a few percent)")
	maxRate = flag.Int("capture-rate", 25000, "the most captures per second any capture run can make: "+
		"each authorization is captured once, so that many per second of the run are stored beforehand")
)

const token = "bench-token"

func main() {
	flag.Parse()
	log.SetFlags(log.Ltime)
	serverURL := os.Getenv("CMPAY_TEST_DATABASE_URL")
	pgBin := os.Getenv("CMPAY_PG_BIN")
	if serverURL == "" || pgBin == "" {
		log.Fatal("CMPAY_TEST_DATABASE_URL and CMPAY_PG_BIN are not set: run ./scripts/bench.sh")
	}
	work, err := os.MkdirTemp("", "cmpay-bench-")
	check(err)
	defer os.RemoveAll(work)
	if *afterBinary != "" && *against == "" {
		log.Fatal("-after measures a build against -against's: give both")
	}
	binary, afterName := *afterBinary, binaryName(*afterBinary)
	if binary == "" {
		binary, afterName = filepath.Join(work, "cmpay"), "this checkout ("+commit()+")"
		run("go", "build", "-o", binary, ".")
	}
	if *against != "" {
		if *modes != "" {
			compareModes = nil
			for _, m := range strings.Split(*modes, ",") {
				compareModes = append(compareModes, load.Mode(strings.TrimSpace(m)))
			}
		}
		fmt.Print(compare(serverURL, binary, afterName, *against, *rounds))
		return
	}
	if *soakFor > 0 {
		if !soak(serverURL, binary, *soakFor) {
			os.Exit(1)
		}
		return
	}

	var report strings.Builder
	fmt.Fprintf(&report, "Measured %s on %s (load average %s at the start); commit %s; %d clients; %s per mode after %s of warm-up, "+
		"the create modes in %d alternated rounds of %s after %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), machine(), loadAverage(), commit(), *clients, *measure, *warmup,
		*flatRounds+*flatRounds%2, *flatMeasure, *flatWarmup)

	// Every size's schema first, then the create modes alternated between
	// them (flatness.go), then the rest of each size's runs on its own.
	var schemas []*storedSchema
	var stored []int
	for _, field := range strings.Split(*sizes, ",") {
		if strings.TrimSpace(field) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(field))
		check(err)
		if slices.Contains(stored, n) {
			log.Fatalf("-sizes names %d twice", n)
		}
		schemas = append(schemas, storeSchema(serverURL, n))
		stored = append(stored, n)
	}
	if len(schemas) > 0 {
		postmaster = findPostmaster(schemas[0].db)
		log.Printf("PostgreSQL's postmaster: process %d (0: not on this machine; its CPU is then the machine's less the others')", postmaster)
	}
	loadBefore := loadAverage()
	flat := alternate(schemas, binary, *flatRounds)
	loadAfter := loadAverage()
	for _, st := range schemas {
		creates := map[load.Mode]modeResult{}
		for _, mode := range flatModes {
			creates[mode] = pooled(flat, st.n, mode)
		}
		report.WriteString(postgresRun(st, pgBin, binary, work, creates))
	}
	report.WriteString(flatReport(flat, stored, loadBefore, loadAfter))
	if *procs {
		report.WriteString(processorRun(serverURL, binary))
	}
	if *sqlite {
		report.WriteString(sqliteRun(binary, work))
	}
	fmt.Print(report.String())
	if *write != "" {
		check(replaceSection(*write, report.String()))
		log.Printf("results written to %s", *write)
	}
}

// modeResult is one row of a table.
type modeResult struct {
	load.Result
	peakRSS int64  // kB
	cpu     cpuUse // over the measured time
}

// freshSchema creates an empty schema and returns a connection to the
// server, the DATABASE_URL that reaches the schema, and what drops it.
func freshSchema(serverURL, schema string) (*gorm.DB, string, func()) {
	admin, err := database.Open(serverURL, database.Options{})
	check(err)
	check(admin.Exec(`DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`).Error)
	check(admin.Exec(`CREATE SCHEMA ` + schema).Error)
	return admin, withParam(serverURL, "search_path", schema), func() {
		admin.Exec(`DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`)
		database.Close(admin)
	}
}

// postgresRun measures what remains at one size once the create modes
// have run in alternated rounds (creates, pooled per mode): the floor, the
// pgbench limits, captures and refunds; and returns the size's tables. It
// drops the schema.
func postgresRun(st *storedSchema, pgBin, binary, work string, creates map[load.Mode]modeResult) string {
	defer st.close()
	if st.used && st.n < reseedBelow {
		st.store() // back to n payments for pgbench and the lifecycle's modes
	}
	serverURL, schema, appURL, db := st.serverURL, st.schema, st.appURL, st.db
	results := maps.Clone(creates)
	srv := startServer(binary, appURL)
	results[load.Floor] = drive(srv, load.Floor, nil)
	srv.stop()

	pgURL := withParam(serverURL, "options", "-csearch_path="+schema)
	limitNew := pgbench(pgBin, work, pgURL, "limit-new", limitNewSQL)
	limitReplay := pgbench(pgBin, work, pgURL, "limit-replay", limitReplaySQL)
	serverNew := pgbench(pgBin, work, pgURL, "server-new", serverCreateSQL(false))
	serverReplay := pgbench(pgBin, work, pgURL, "server-replay", serverCreateSQL(true))

	// Captures and refunds, on payments stored for them after the create
	// modes ran, so that those ran on the data they always had.
	log.Printf("seeding authorizations and captured payments")
	start := time.Now()
	perClient := int(float64(*maxRate)*measure.Seconds())/(*clients) + 1
	captures := ids(db, load.Capture, "pay_cap_", int(float64(*maxRate)*(*warmup+*measure).Seconds()))
	refunds := ids(db, load.Refund, "pay_ref_", refundPayments)
	ids(db, load.Capture, limitCapturePrefix, capturePayments(*clients, perClient))
	ids(db, load.Capture, serverCapturePrefix, capturePayments(*clients, perClient))
	ids(db, load.Refund, pgbenchRefundPrefix, refundPayments)
	authorized := len(captures) + 2*capturePayments(*clients, perClient)
	check(db.Exec(`VACUUM ANALYZE`).Error)
	log.Printf("seeded in %s", time.Since(start).Round(time.Second))

	srv = startServer(binary, appURL)
	results[load.Capture] = drive(srv, load.Capture, captures)
	results[load.Refund] = drive(srv, load.Refund, refunds)
	srv.stop()

	first := []string{"-D", "i=0"} // nextPayment's counter
	limitCapture := pgbench(pgBin, work, pgURL, "limit-capture", limitCaptureSQL(*clients), first...)
	capturedAll(db, limitCapturePrefix, limitCapture)
	limitRefund := pgbench(pgBin, work, pgURL, "limit-refund", limitRefundSQL)
	serverCapture := pgbench(pgBin, work, pgURL, "server-capture", serverChangeSQL(false, *clients), first...)
	capturedAll(db, serverCapturePrefix, serverCapture)
	serverRefund := pgbench(pgBin, work, pgURL, "server-refund", serverChangeSQL(true, *clients))

	var b strings.Builder
	fmt.Fprintf(&b, "### PostgreSQL, %s payments stored\n\n", thousands(st.n))
	b.WriteString("| mode | requests/s | p50 ms | p99 ms | errors | peak RSS MB | limit tps (pgbench) | server ÷ limit |\n|---|---|---|---|---|---|---|---|\n")
	limits := map[load.Mode]float64{
		load.New:      limitNew.tps,
		load.Replay:   limitReplay.tps,
		load.Conflict: limitReplay.tps, // a conflict's least work is a replay's: look up, record
		// The mix's limit: the time-weighted blend of its parts.
		load.Mix:     1 / (0.80/limitNew.tps + 0.20/limitReplay.tps),
		load.Capture: limitCapture.tps,
		load.Refund:  limitRefund.tps,
	}
	modes := []load.Mode{load.New, load.Replay, load.Conflict, load.Mix, load.Capture, load.Refund}
	for _, mode := range modes {
		r := results[mode]
		fmt.Fprintf(&b, "| %s | %.0f | %.2f | %.2f | %d | %.1f | %.0f | %.2f |\n", mode, r.RPS(), ms(r.P50), ms(r.P99),
			r.ErrorCount(), float64(r.peakRSS)/1024, limits[mode], r.RPS()/limits[mode])
	}
	fmt.Fprintf(&b, "\nThe create modes' rows are their alternated rounds at this size taken together (the flatness section below): "+
		"every request over every measured second, the median p50, the highest p99 and peak RSS of a server that ran one round. "+
		"The rest ran once the rounds were over, on the schema stored afresh below %s payments and as the rounds left it above.\n\n",
		thousands(reseedBelow))
	fmt.Fprintf(&b, "pgbench `-M prepared -c %d`, same schema and data: the limit for a new key %.0f tps, for a replay %.0f tps, "+
		"for a capture %.0f tps, for a refund %.0f tps; the server's own statements, one request per statement: "+
		"`payments.CreateBatchSQL` %.0f tps for new keys and %.0f tps for replays, `payments.ChangeBatchSQL` %.0f tps for captures and %.0f tps for refunds.\n\n",
		*clients, limitNew.tps, limitReplay.tps, limitCapture.tps, limitRefund.tps, serverNew.tps, serverReplay.tps, serverCapture.tps, serverRefund.tps)
	fmt.Fprintf(&b, "Captures and refunds ran after the pgbench runs above, once %s authorizations (as many as %s captures per second allow, "+
		"for the server and for each capture run of pgbench) and %s captured payments (half for the server, half for pgbench) "+
		"were stored beside the payments above.\n\n", thousands(authorized), thousands(*maxRate), thousands(2*refundPayments))

	writeCPUTable(&b, results, append(modes, load.Floor), []namedRun{
		{"limit, new key", limitNew}, {"limit, replay", limitReplay}, {"limit, capture", limitCapture}, {"limit, refund", limitRefund}})
	return b.String()
}

// namedRun is a pgbench run and its row's name in the report.
type namedRun struct {
	name string
	r    pgbenchRun
}

// writeCPUTable writes to b where the CPU went in the server's modes and
// in the pgbench runs.
func writeCPUTable(b *strings.Builder, results map[load.Mode]modeResult, modes []load.Mode, runs []namedRun) {
	b.WriteString("Where the CPU went: µs per request (per transaction for pgbench) spent by each party, and the cores left idle. " +
		"PostgreSQL's share is the machine's busy time less the others' (it includes the kernel's network work not charged to a process). " +
		"`floor` is the query `{ __typename }` through the same server: HTTP, middleware and GraphQL with no database.\n\n")
	b.WriteString("| run | requests/s | server | PostgreSQL | load generator or pgbench | idle cores |\n|---|---|---|---|---|---|\n")
	for _, mode := range modes {
		r := results[mode]
		fmt.Fprintf(b, "| server, %s | %.0f | %.0f | %.0f | %.0f | %.2f |\n", mode, r.RPS(), perRequest(r.cpu.server, r.Requests),
			perRequest(r.cpu.postgres, r.Requests), perRequest(r.cpu.bench, r.Requests), r.cpu.cores(r.cpu.idle))
	}
	for _, run := range runs {
		n := run.r.transactions
		fmt.Fprintf(b, "| pgbench %s | %.0f | | %.0f | %.0f | %.2f |\n", run.name, run.r.tps, perRequest(run.r.cpu.postgres, n),
			perRequest(run.r.cpu.bench, n), run.r.cpu.cores(run.r.cpu.idle))
	}
	b.WriteString("\n")
}

// ids stores n payments in the state mode acts on (load.SeedPayments) and
// returns their ids.
func ids(db *gorm.DB, mode load.Mode, prefix string, n int) []string {
	out, err := load.SeedPayments(db, mode, prefix, n)
	check(err)
	return out
}

// capturedAll fails the benchmark if a pgbench capture run made
// transactions that found no authorization left, which would have cost
// less than a capture: -capture-rate was too low.
func capturedAll(db *gorm.DB, prefix string, run pgbenchRun) {
	var captured int
	check(db.Raw(`SELECT COUNT(*) FROM payments WHERE id LIKE ? AND status = 'CAPTURED'`, prefix+"%").Scan(&captured).Error)
	if captured < run.transactions {
		log.Fatalf("pgbench captured %d of the %s authorizations in %d transactions: some found none left; raise -capture-rate above %d",
			captured, prefix, run.transactions, *maxRate)
	}
}

func sqliteRun(binary, work string) string {
	dbURL := "sqlite:" + filepath.Join(work, "bench.db")
	var b strings.Builder
	b.WriteString("### SQLite (embedded default: WAL, synchronous=FULL, busy_timeout 10 s, BEGIN IMMEDIATE)\n\n")
	b.WriteString("| mode | requests/s | p50 ms | p99 ms | errors | peak RSS MB |\n|---|---|---|---|---|---|\n")
	row := func(mode load.Mode, r modeResult) {
		fmt.Fprintf(&b, "| %s | %.0f | %.2f | %.2f | %d | %.1f |\n", mode, r.RPS(), ms(r.P50), ms(r.P99), r.ErrorCount(), float64(r.peakRSS)/1024)
	}
	// Creates on a fresh file, as before there were captures and refunds.
	srv := startServer(binary, dbURL)
	for _, mode := range []load.Mode{load.New, load.Replay} {
		row(mode, drive(srv, mode, nil))
	}
	srv.stop()

	// Then, as on PostgreSQL, the payments captures and refunds act on,
	// and a fresh server.
	db, err := database.Open(dbURL, database.Options{})
	check(err)
	log.Printf("seeding authorizations and captured payments in SQLite")
	start := time.Now()
	captures := ids(db, load.Capture, "pay_cap_", int(float64(*maxRate)*(*warmup+*measure).Seconds()))
	refunds := ids(db, load.Refund, "pay_ref_", refundPayments)
	check(database.Close(db))
	log.Printf("seeded in %s", time.Since(start).Round(time.Second))
	srv = startServer(binary, dbURL)
	defer srv.stop()
	row(load.Capture, drive(srv, load.Capture, captures))
	row(load.Refund, drive(srv, load.Refund, refunds))
	fmt.Fprintf(&b, "\nCaptures and refunds ran after the creates, on a restarted server, once %s authorizations and %s captured payments were stored for them.\n\n",
		thousands(len(captures)), thousands(len(refunds)))
	return b.String()
}

// drive runs the load generator in a mode against srv; capture and refund
// act on payments.
func drive(srv *server, mode load.Mode, payments []string) modeResult {
	return driveWith(srv, load.Config{Mode: mode, Payments: payments})
}

// driveWith runs the load generator as cfg says (its mode, payments and
// payment method token, and its warm-up and measured time if it sets them;
// the rest from the flags) against srv.
func driveWith(srv *server, cfg load.Config) modeResult {
	mode := cfg.Mode
	warm, measured := *warmup, *measure
	if cfg.Measure > 0 {
		warm, measured = cfg.Warmup, cfg.Measure
	}
	log.Printf("driving %s at %d clients", mode, *clients)
	var mu sync.Mutex // OnMeasure runs on a timer's goroutine
	var from, to cpuSample
	var profiled <-chan struct{}
	r, err := load.Run(context.Background(), load.Config{
		URL: srv.url, Token: token, Clients: *clients, Warmup: warm, Measure: measured,
		Mode: mode, SeedKeys: seedKeys(mode), Payments: cfg.Payments, PaymentMethodToken: cfg.PaymentMethodToken,
		RunID: fmt.Sprintf("%s-%d", mode, time.Now().UnixNano()),
		OnMeasure: func(started bool) {
			sample := sampleCPU(srv.cmd.Process.Pid)
			mu.Lock()
			defer mu.Unlock()
			if started && srv.debug != "" {
				if srv.label == "" {
					srv.label = fmt.Sprintf("%s-%d", mode, time.Now().UnixNano())
				}
				profiled = profileServer(srv, measured)
			}
			if started {
				from = sample
			} else {
				to = sample
			}
		},
	})
	check(err)
	if len(r.Errors) > 0 {
		log.Printf("%s: unexpected answers %v", mode, r.Errors)
	}
	mu.Lock()
	if profiled != nil {
		<-profiled
	}
	defer mu.Unlock()
	return modeResult{Result: r, peakRSS: srv.peakRSS(), cpu: from.until(to)}
}

// seedKeys is how many keys a mode needs created before it runs.
func seedKeys(mode load.Mode) int {
	switch mode {
	case load.Floor, load.Capture, load.Refund:
		return 0
	}
	return 1000
}

// seed stores n payments with their keys and creation attempts, as a
// server would have: captured at creation, each key with the parameters
// and the fingerprint (version 2) the server would have stored, so that a
// retry of one replays (TestSeedReplays). It also stores the payments
// pgbench's replays use, keyed 'r1' to 'r1000' for client pgbench.
func seed(db *gorm.DB, n int) {
	// The canonical parameters of each create, and their fingerprint:
	// params.go in payments, written in SQL (an amount reduced as apd
	// reduces it; every length prefix fits a byte).
	const params = `'{"amount":"' || trim_scale(amount_minor / 100.0) ||
		'","capture":"true","currency":"BRL","method":"PIX","operation":"CREATE_PAYMENT"}'`
	const withParams = `(SELECT p.*, ` + params + ` AS params FROM payments p) p`
	const fingerprint = `sha256('\x14'::bytea || convert_to('cmpay/idempotency/v2', 'UTF8') ||
		set_byte('\x00'::bytea, 0, octet_length(params)) || convert_to(params, 'UTF8'))`
	for _, stmt := range []string{
		`INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at,
		                       status, captured_minor, captured_at)
		 SELECT 'pay_seed_' || g, 'seed-' || (g % 10000), 'seed-' || g, 1000 + g % 5000, 'BRL', 'PIX', t,
		        'CAPTURED', 1000 + g % 5000, t
		 FROM generate_series(1, ?) g, LATERAL (SELECT now() - g * interval '1 second' AS t) s`,
		`INSERT INTO payments (id, client_id, idempotency_key, amount_minor, currency, method, created_at,
		                       status, captured_minor, captured_at)
		 SELECT 'pay_pgbench_' || g, 'pgbench', 'r' || g, 1000, 'BRL', 'PIX', now(), 'CAPTURED', 1000, now()
		 FROM generate_series(1, 1000) g`,
		`INSERT INTO idempotency_keys (client_id, idempotency_key, operation, fingerprint, fingerprint_version, params,
		                               payment_id, created_at)
		 SELECT client_id, idempotency_key, 'CREATE_PAYMENT', ` + fingerprint + `, 2, params, id, now() FROM ` + withParams,
		`INSERT INTO idempotency_attempts (payment_id, operation, idempotency_key, outcome, at, params, transport)
		 SELECT id, 'CREATE_PAYMENT', idempotency_key, 'CREATED', created_at, params, 'seed' FROM ` + withParams,
		// Vacuumed now, so that autovacuum does not take a share of the
		// machine in the middle of a measured run; these tables alone, as
		// another size's schema may be stored beside them.
		`VACUUM ANALYZE payments, idempotency_keys, idempotency_attempts`,
	} {
		var args []any
		if strings.Contains(stmt, "generate_series(1, ?)") {
			args = []any{n}
		}
		check(db.Exec(stmt, args...).Error)
	}
}

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+)`)

// pgbenchRun is what one pgbench run measured.
type pgbenchRun struct {
	tps          float64
	transactions int    // how many it made
	cpu          cpuUse // bench is pgbench's own CPU time
}

var processedLine = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)

// pgbench runs script at the benchmark's concurrency for the measured
// time; args go to pgbench before it.
func pgbench(pgBin, work, pgURL, name, script string, args ...string) pgbenchRun {
	path := filepath.Join(work, name+".sql")
	check(os.WriteFile(path, []byte(script), 0o644))
	log.Printf("pgbench %s", name)
	args = append([]string{"-n", "-M", "prepared", "-c", strconv.Itoa(*clients), "-j", "2",
		"-T", strconv.Itoa(int((*measure).Seconds()))}, args...)
	cmd := exec.Command(filepath.Join(pgBin, "pgbench"), append(args, "-f", path, pgURL)...)
	from := sampleCPU(0)
	out, err := cmd.CombinedOutput()
	use := from.until(sampleCPU(0))
	if err != nil {
		log.Fatalf("pgbench %s: %v\n%s", name, err, out)
	}
	// pgbench is the client here; this process only waited.
	pgbenchCPU := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	use.postgres -= pgbenchCPU - use.bench
	use.bench = pgbenchCPU
	m, p := tpsLine.FindSubmatch(out), processedLine.FindSubmatch(out)
	if m == nil || p == nil {
		log.Fatalf("pgbench %s printed no tps:\n%s", name, out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	n, _ := strconv.Atoi(string(p[1]))
	return pgbenchRun{tps: tps, transactions: n, cpu: use}
}

// server is the CMPay process under test.
type server struct {
	cmd *exec.Cmd
	url string
	// debug is its DEBUG_ADDR, with -cpuprofile; label names its profiles.
	debug, label string
}

func startServer(binary, databaseURL string, env ...string) *server {
	cmd := exec.Command(binary)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+databaseURL, "ADDR=127.0.0.1:0", "API_TOKENS="+token, "ADMIN_PASSWORD=bench")
	cmd.Env = append(cmd.Env, env...)
	debug := ""
	if *cpuProfile != "" {
		debug = debugAddr()
		cmd.Env = append(cmd.Env, "DEBUG_ADDR="+debug)
	}
	stdout, err := cmd.StdoutPipe()
	check(err)
	cmd.Stderr = io.Discard
	check(cmd.Start())
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "CMPay listening on "); ok {
			go io.Copy(io.Discard, stdout)
			return &server{cmd: cmd, url: rest, debug: debug}
		}
	}
	log.Fatal("the server exited before listening")
	return nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
}

// peakRSS is the process's high-water resident set, in kB.
func (s *server) peakRSS() int64 { return s.memory("VmHWM") }

// rss is the process's current resident set, in kB.
func (s *server) rss() int64 { return s.memory("VmRSS") }

// memory reads a kB figure of /proc/<pid>/status.
func (s *server) memory(field string) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb
		}
	}
	return 0
}

const (
	startMarker = "<!-- cmpay-bench:start -->"
	endMarker   = "<!-- cmpay-bench:end -->"
)

// replaceSection puts text between the markers of a Markdown file.
func replaceSection(path, text string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(raw)
	start, end := strings.Index(doc, startMarker), strings.Index(doc, endMarker)
	if start < 0 || end < start {
		return fmt.Errorf("%s has no %s … %s section", path, startMarker, endMarker)
	}
	doc = doc[:start+len(startMarker)] + "\n" + text + doc[end:]
	return os.WriteFile(path, []byte(doc), 0o644)
}

func machine() string {
	cpu := "unknown CPU"
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`model name\s*:\s*(.+)`).FindSubmatch(info); m != nil {
			cpu = string(m[1])
		}
	}
	cores, _ := exec.Command("nproc").Output()
	return fmt.Sprintf("%s cores (%s)", strings.TrimSpace(string(cores)), cpu)
}

func commit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if dirty, _ := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); len(dirty) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}

func withParam(rawURL, key, value string) string {
	u, err := url.Parse(rawURL)
	check(err)
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}

func run(name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	check(cmd.Run())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

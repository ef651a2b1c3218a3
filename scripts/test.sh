#!/usr/bin/env bash
# Runs every check and test of CMPay, exactly as CI does (.ci/run calls it).
# It starts and installs what the tests need by itself: a throwaway
# PostgreSQL server unless CMPAY_TEST_DATABASE_URL names one, Chromium for
# the real-browser tests, Node.js and the npm packages of the graphql-http
# audit and of the TypeScript client (apt-get and npm where missing).
#
# Steps that do not depend on each other run side by side (start_step and
# finish_step in scripts/lib.sh): each one's output is printed whole when
# it is waited for. docs/benchmarks/2026-12-06-test-command.md has the
# times of each step and why the order is this one.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

start=$(date +%s)
ensure_postgres
ensure_chromium
ensure_node

# The client's packages come from its lock file, fresh: the freshness check
# below runs its codegen, and its tests run after Go's.
log "installing the TypeScript client's packages (npm ci in clients/typescript)"
npm ci --silent --no-audit --no-fund --prefix clients/typescript

# Before anything else reads the sources: it regenerates them in place.
log "generated code is fresh"
scripts/check-generated.sh

# The fuzz targets' test binaries, built once per package with coverage
# instrumentation, in the background beside gofmt, go vet and staticcheck;
# not before the generated code's check, which rewrites sources it
# compiles, and waited for before the tests, which would otherwise share
# the CPU with it. Each target then runs from its package's binary instead
# of `go test -fuzz` compiling and linking once per target.
#
# Only the code the fuzzed inputs steer is instrumented: CMPay's packages
# and the parsers they hand the input to. `go test -fuzz` instruments every
# dependency, SQLite's WebAssembly runtime, the ORM and the database drivers
# included, and each execution then compares all their coverage counters:
# 2,500 to 4,600 executions a second for FuzzValidateKey against 15,000 to
# 50,000 this way, for the same budgets (docs/benchmarks/2026-12-06-test-command.md).
# -d=libfuzzer is the compiler setting `go test -fuzz` itself adds per package.
fuzz_bin=$(mktemp -d "${TMPDIR:-/tmp}/cmpay-fuzz.XXXXXX")
trap 'stop_steps; rm -rf "$fuzz_bin"; stop_postgres' EXIT
fuzz_packages="payments httpapi graph processor/stripe"
fuzz_instrumented="github.com/cmpay/cmpay/... github.com/cockroachdb/apd/v3/... github.com/go-json-experiment/json/...
  github.com/vektah/gqlparser/v2/... github.com/99designs/gqlgen/... github.com/stripe/stripe-go/v82/... encoding/json"
build_fuzz_binaries() {
  local pkg pattern gcflags=()
  for pattern in $fuzz_instrumented; do gcflags+=("-gcflags=$pattern=-d=libfuzzer"); done
  for pkg in $fuzz_packages; do
    go test -c "${gcflags[@]}" -o "$fuzz_bin/${pkg//\//_}.test" "./$pkg/" || return 1
  done
  # The server as tests/docs, tests/integration and the TypeScript client's
  # tests run it (no race detector), linked once for the three of them.
  go build -o "$fuzz_bin/cmpay" .
}
start_step "build the fuzz targets and the server" build_fuzz_binaries

log "gofmt"
unformatted=$(gofmt -l $(git ls-files -co --exclude-standard '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted" >&2; exit 1; fi

# go vet and staticcheck read the same sources and share nothing else.
start_step "go vet" go vet ./...
start_step "staticcheck" go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
finish_step "go vet"
finish_step "staticcheck"
finish_step "build the fuzz targets and the server"

log "go test -race"
export CMPAY_SERVER_BIN="$fuzz_bin/cmpay"
go test -race -count=1 -timeout 20m ./...

# Each fuzz target explores beyond its seed corpus for one to three seconds
# of this machine's work, budgeted in executions (-fuzztime Nx), not time:
# with a duration, Go 1.26's coordinator can fail a run at the deadline
# with a bare "context deadline exceeded" and no input (go.dev/issue/75804,
# fixed in Go 1.27; seen here once under load). A crash it finds is written
# to testdata/fuzz and fails the run, and then stays as a regression input.
# CMPAY_FUZZTIME (30s, 100000x) replaces every budget. A binary runs in its
# package's folder (its seed corpus, where a crash is written) with the
# cache folder `go test -fuzz` would give it.
fuzz_all() {
  local target pkg name budget
  for target in payments:FuzzParseAmount:10000x payments:FuzzParseChangeAmount:20000x payments:FuzzValidateKey:40000x \
    payments:FuzzFingerprint:8000x httpapi:FuzzRequestDecoding:2000x graph:FuzzReadBody:20000x \
    processor/stripe:FuzzDecodeEvent:20000x; do
    IFS=: read -r pkg name budget <<<"$target"
    echo "fuzz $name (./$pkg, ${CMPAY_FUZZTIME:-$budget})"
    (cd "$pkg" && "$fuzz_bin/${pkg//\//_}.test" -test.run='^$' -test.fuzz="^${name}\$" \
      -test.fuzztime="${CMPAY_FUZZTIME:-$budget}" \
      -test.fuzzcachedir="$(go env GOCACHE)/fuzz/github.com/cmpay/cmpay/$pkg") || return 1
  done
}

# The TypeScript client's tests spend most of their time waiting (for
# Chromium, for servers they start and kill): the fuzzing runs beside them.
# The client's tests build the server (go build, into a temporary folder)
# and run it on SQLite: unit tests, processes killed mid-request, and
# Chromium pages reloaded or cut off mid-request (clients/typescript/README.md,
# "Tests").
log "fuzzing each target (${CMPAY_FUZZTIME:-1 to 3 s each, counted in executions}), beside the client's tests"
start_step "fuzzing" fuzz_all
log "TypeScript client: npm run build && npm test (clients/typescript)"
ts_status=0
(cd clients/typescript && npm run build && npm test) || ts_status=$?
finish_step "fuzzing"
[ "$ts_status" = 0 ] || { echo "TypeScript client tests failed" >&2; exit "$ts_status"; }

log "all checks passed in $(( $(date +%s) - start ))s"

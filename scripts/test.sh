#!/usr/bin/env bash
# Runs every check and test of CMPay, exactly as CI does (.ci/run calls it).
# It starts and installs what the tests need by itself: a throwaway
# PostgreSQL server unless CMPAY_TEST_DATABASE_URL names one, Chromium for
# the real-browser tests, Node.js and the graphql-http audit package
# (apt-get and npm where missing).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

start=$(date +%s)
ensure_postgres
ensure_chromium
ensure_node

log "generated code is fresh"
scripts/check-generated.sh

log "gofmt"
unformatted=$(gofmt -l $(git ls-files -co --exclude-standard '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted" >&2; exit 1; fi

log "go vet"
go vet ./...

log "staticcheck"
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

log "go test -race"
go test -race -count=1 -timeout 20m ./...

# Each fuzz target explores beyond its seed corpus for a few seconds; a
# crash it finds is written to testdata/fuzz and fails the run, and then
# stays as a regression input.
log "fuzzing each target for ${CMPAY_FUZZTIME:=5s}"
for target in payments:FuzzParseAmount payments:FuzzParseChangeAmount payments:FuzzValidateKey payments:FuzzFingerprint httpapi:FuzzRequestDecoding; do
  go test -run '^$' -fuzz "^${target#*:}\$" -fuzztime "$CMPAY_FUZZTIME" "./${target%%:*}/"
done

log "all checks passed in $(( $(date +%s) - start ))s"

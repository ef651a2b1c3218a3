#!/usr/bin/env bash
# Times the admin pages (each with its session check) against PostgreSQL
# holding a million payments (set CMPAY_BENCH_PAYMENTS to change it), then
# the CSV export of all of them and of one client's 100,000: rows per second
# and resident memory as it streams. Starts PostgreSQL as the tests do.
#   ./scripts/bench-admin.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_postgres
log "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.1f GB", $2/1048576}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
log "seeding ${CMPAY_BENCH_PAYMENTS:-1000000} payments, then timing each page"
go test -run '^$' -bench 'BenchmarkAdminPages$' -benchtime 100x -timeout 30m ./web/
log "seeding again, then exporting them as CSV (one download per line)"
go test -run '^$' -bench 'BenchmarkAdminExport$' -benchtime 1x -timeout 30m ./web/
log "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# Times the admin pages against PostgreSQL holding a million payments (set
# CMPAY_BENCH_PAYMENTS to change it). Starts PostgreSQL as the tests do.
#   ./scripts/bench-admin.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_postgres
log "seeding ${CMPAY_BENCH_PAYMENTS:-1000000} payments, then timing each page"
go test -run '^$' -bench BenchmarkAdminPages -benchtime 100x -timeout 30m ./web/

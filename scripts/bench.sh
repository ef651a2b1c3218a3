#!/usr/bin/env bash
# The performance benchmark: CMPay's createPayment, capturePayment and
# refundPayment over HTTP beside what PostgreSQL itself can do (pgbench), at
# 10,000 and 1,000,000 stored payments (the create modes alternated
# between the two sizes, round by round), and the SQLite mode. Starts
# PostgreSQL as the tests do. Takes about eighteen minutes; the results
# replace the section of docs/benchmarks/README.md.
#   ./scripts/bench.sh                 (flags go to cmd/cmpay-bench: -duration 15s -clients 16 -capture-rate 25000 …)
#   ./scripts/bench.sh -flat-rounds 4 -flat-duration 6s -flat-warmup 2s   (the alternated rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_postgres
go run ./cmd/cmpay-bench -write docs/benchmarks/README.md "$@"

#!/usr/bin/env bash
# The soak test: mixed traffic (80% new keys, 15% replays, 5% conflicts) at
# 32 clients against PostgreSQL on loopback for a few minutes. Fails unless
# there are no unexpected answers, no duplicate payments, and the server's
# memory at the end is within 20% of its memory after warm-up.
#   ./scripts/soak.sh          (3 minutes)
#   ./scripts/soak.sh 10m
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_postgres
go run ./cmd/cmpay-bench -soak "${1:-3m}"

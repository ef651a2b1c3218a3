#!/usr/bin/env bash
# Starts a throwaway PostgreSQL for working on CMPay and prints the
# environment that points tests at it; Ctrl-C stops and removes it.
#   ./scripts/dev-postgres.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
unset CMPAY_TEST_DATABASE_URL
ensure_postgres
echo "export CMPAY_TEST_DATABASE_URL='$CMPAY_TEST_DATABASE_URL' CMPAY_PG_BIN='$CMPAY_PG_BIN'"
echo "DATABASE_URL=$CMPAY_TEST_DATABASE_URL go run .   # to run the server on it"
while sleep 3600; do :; done

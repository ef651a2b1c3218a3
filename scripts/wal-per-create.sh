#!/usr/bin/env bash
# WAL bytes PostgreSQL writes per createPayment: builds the server from the
# checkout given (default: this one), runs it on a fresh database, sends 200
# creates of warm-up, then 2,000 with new keys and 2,000 replays of them,
# 8 at a time, and prints the WAL between pg_current_wal_lsn() before and
# after each, per request. Unlike time, WAL does not move with the
# machine's neighbours: compare two commits with it
# (docs/benchmarks/2026-12-03-createpayment-before-and-after-v2.md). With -dump, also sums pg_waldump's
# records of the new keys by relation.
#   ./scripts/wal-per-create.sh [-dump] [checkout]
set -euo pipefail
dump=false
if [ "${1:-}" = -dump ]; then dump=true; shift; fi
checkout=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_postgres
work=$(mktemp -d)
# One EXIT trap for all: it replaces ensure_postgres's, so it stops that
# PostgreSQL too.
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$work"; stop_postgres' EXIT
(cd "$checkout" && go build -o "$work/cmpay" .)

psql() { "$CMPAY_PG_BIN/psql" -X -q -t -A "$@"; }
db=wal_$$
PGOPTIONS="-c client_min_messages=warning" psql -d "$CMPAY_TEST_DATABASE_URL" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
url=$(echo "$CMPAY_TEST_DATABASE_URL" | sed -E "s|^([^/]*//[^/]*)/[^?]*|\\1/$db|") # the same server, database $db
port=$(free_port 18080)
DATABASE_URL=$url ADDR=127.0.0.1:$port API_TOKENS=wal-token ADMIN_PASSWORD=wal-password-1234 "$work/cmpay" >"$work/server.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.2; done
curl -sf -o /dev/null "http://127.0.0.1:$port/healthz" || { echo "the server did not start:" >&2; cat "$work/server.log" >&2; exit 1; }

# send PREFIX N: N createPayments with keys PREFIX-1 … PREFIX-N, 8 at a time.
send() {
  seq "$2" | xargs -P 8 -I{} curl -sf -o /dev/null -H 'Authorization: Bearer wal-token' -H 'Content-Type: application/json' \
    -d '{"query":"mutation($in: CreatePaymentInput!, $key: String!) { createPayment(input: $in, idempotencyKey: $key) { replayed payment { id } } }","variables":{"key":"'"$1"'-{}","in":{"clientId":"wal","amount":"10.00","currency":"BRL","method":"PIX"}}}' \
    "http://127.0.0.1:$port/graphql"
}
lsn() { psql -d "$CMPAY_TEST_DATABASE_URL" -c "SELECT pg_current_wal_lsn()"; }
per() { psql -d "$CMPAY_TEST_DATABASE_URL" -c "SELECT round(pg_wal_lsn_diff('$2', '$1') / 2000)"; }

send warm 200; sleep 2
a=$(lsn); send key 2000; sleep 2
b=$(lsn); send key 2000; sleep 2
c=$(lsn)
# Every new key made one payment and every replay was counted as one (curl
# -f sees only HTTP failures, not GraphQL errors): else the bytes are not
# per request.
counts=$(psql -d "$url" -F ' ' -c "SELECT count(*), sum(replay_count) FROM payments")
[ "$counts" = "2200 2000" ] || { echo "expected 2200 payments and 2000 replays, found $counts" >&2; exit 1; }
echo "$(cd "$checkout" && git rev-parse --short HEAD): WAL bytes per new key $(per "$a" "$b"), per replay $(per "$b" "$c")"

if $dump; then
  datadir=$(psql -d "$CMPAY_TEST_DATABASE_URL" -c "SHOW data_directory")
  names=$(psql -d "$url" -F ' ' -c "SELECT pg_relation_filenode(oid), relname FROM pg_class WHERE pg_relation_filenode(oid) IS NOT NULL")
  "$CMPAY_PG_BIN/pg_waldump" -p "$datadir/pg_wal" -s "$a" -e "$b" 2>/dev/null |
    awk -v names="$names" '
      BEGIN { n = split(names, l, "\n"); for (i = 1; i <= n; i++) { split(l[i], f, " "); rel[f[1]] = f[2] } }
      { match($0, /len \(rec\/tot\): *[0-9]+\/ *[0-9]+/); split(substr($0, RSTART, RLENGTH), t, "/"); bytes = t[3] + 0
        r = "-"; if (match($0, /rel [0-9]+\/[0-9]+\/[0-9]+/)) { split(substr($0, RSTART, RLENGTH), p, "/"); r = p[3] in rel ? rel[p[3]] : p[3] }
        sum[$2 " " r] += bytes }
      END { for (k in sum) printf "%8.1f  %s\n", sum[k] / 2000, k }' | sort -rn | head -25
fi

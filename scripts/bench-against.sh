#!/usr/bin/env bash
# createPayment before and after a change, measured the only way this kind
# of shared machine allows: this checkout's server alternated with another
# commit's, round by round, under the same load (cmd/cmpay-bench -against).
# Starts PostgreSQL as the tests do. Ten rounds of 8 s per mode after 2 s
# of warm-up took six minutes; a difference of 3-5% needs about that many
# to show on this machine. Rounds are even: each build runs first in half.
# A second commit is measured instead of this checkout: a change as it was
# merged, against the commit before it.
#   ./scripts/bench-against.sh COMMIT            e.g. 82f9e9d, the first version
#   ./scripts/bench-against.sh COMMIT -rounds 10 -duration 8s -warmup 2s
#   ./scripts/bench-against.sh 82f9e9d 7e8705c   the lifecycle alone
#   ./scripts/bench-against.sh COMMIT -modes capture,refund   sandbox changes; stripe-refund through Stripe
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
[ $# -ge 1 ] || { echo "usage: $0 COMMIT [AFTER_COMMIT] [cmpay-bench flags]" >&2; exit 2; }
rev=$(git rev-parse --short "$1^{commit}")
shift
after=""
if [ $# -ge 1 ] && [ "${1#-}" = "$1" ]; then
  after=$(git rev-parse --short "$1^{commit}")
  shift
fi
work=$(mktemp -d)
# One EXIT trap for all, set again after ensure_postgres (which sets its
# own): stop_postgres does nothing when it started none.
cleanup() {
  git worktree remove --force "$work/src" >/dev/null 2>&1 || true
  rm -rf "$work"
  stop_postgres
}
trap cleanup EXIT
log "building $rev"
git worktree add --detach "$work/src" "$rev" >/dev/null
(cd "$work/src" && go build -o "$work/cmpay-$rev" .)
flags=()
if [ -n "$after" ]; then
  log "building $after"
  git -C "$work/src" checkout --quiet --detach "$after"
  (cd "$work/src" && go build -o "$work/cmpay-$after" .)
  flags=(-after "$work/cmpay-$after")
fi
ensure_postgres
trap cleanup EXIT
go run ./cmd/cmpay-bench -against "$work/cmpay-$rev" "${flags[@]}" "$@"

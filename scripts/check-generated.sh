#!/usr/bin/env bash
# Fails when `go generate ./...` or the TypeScript client's `npm run codegen`
# would change any file: the generated code committed (gqlgen, templ, the
# client's typed documents in clients/typescript/src/gql) must match
# schema.graphqls and the .templ files. The client's codegen needs its npm
# packages: they are installed (npm ci) when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

snapshot() { git ls-files -co --exclude-standard -z | xargs -0 sha256sum 2>/dev/null | sort; }
before=$(mktemp); after=$(mktemp)
trap 'rm -f "$before" "$after"' EXIT
snapshot >"$before"
go generate ./...
if [ ! -d clients/typescript/node_modules ]; then
  npm ci --silent --no-audit --no-fund --prefix clients/typescript
fi
npm run --silent --prefix clients/typescript codegen >/dev/null
snapshot >"$after"
if ! diff -q "$before" "$after" >/dev/null; then
  echo "go generate ./... or the TypeScript client's codegen changed these files;" >&2
  echo "run go generate ./... and (cd clients/typescript && npm run codegen), and commit the result:" >&2
  diff "$before" "$after" | awk '/^[<>]/ {print "  " $3}' | sort -u >&2
  exit 1
fi
echo "generated code is fresh"

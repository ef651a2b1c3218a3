#!/usr/bin/env bash
# Fails when `go generate ./...` would change any file: the generated code
# committed (gqlgen, templ) must match schema.graphqls and the .templ files.
set -euo pipefail
cd "$(dirname "$0")/.."

snapshot() { git ls-files -co --exclude-standard -z | xargs -0 sha256sum 2>/dev/null | sort; }
before=$(mktemp); after=$(mktemp)
trap 'rm -f "$before" "$after"' EXIT
snapshot >"$before"
go generate ./...
snapshot >"$after"
if ! diff -q "$before" "$after" >/dev/null; then
  echo "go generate ./... changed these files; run it and commit the result:" >&2
  diff "$before" "$after" | awk '/^[<>]/ {print "  " $3}' | sort -u >&2
  exit 1
fi
echo "generated code is fresh"

#!/usr/bin/env bash
# Rebuilds the Playground's assets in web/static/playground: GraphiQL 5,
# React 19, Monaco and the rest, bundled with esbuild from the npm packages
# pinned in scripts/playground/package-lock.json (exact versions and the
# integrity hash of every tarball; `npm ci` refuses anything else), with
# CMPay's examples from scripts/playground/main.jsx and its page styles from
# scripts/playground/page.css. Nothing from the npm
# packages runs at install time (--ignore-scripts). The output, the
# licences of every bundled package (LICENSES.txt) and SHA256SUMS are
# committed, the text files gzipped (scripts/playground/gzip.mjs: the bundle
# is 5 MB, 1.4 MB compressed); the binary embeds them, so the Playground
# fetches nothing from any other host. A build is deterministic: the same
# lock file gives the same bytes (SHA256SUMS and --check compare the files
# as served, uncompressed, so zlib's version does not matter).
#
#   ./scripts/build-playground.sh          rebuild the files in place
#   ./scripts/build-playground.sh --check  fail if the committed files differ
#                                          from a fresh build (or are missing
#                                          or extra)
set -euo pipefail
export LC_ALL=C # the order of files in SHA256SUMS
cd "$(dirname "$0")/.."

src=scripts/playground
dest=web/static/playground
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$work/out
mkdir -p "$out"

npm ci --ignore-scripts --no-audit --no-fund --loglevel=error --prefix "$src" >&2
node "$src/build.mjs" "$out"
versions=$(cd "$src" && node -e '
  const lock = require("./package-lock.json").packages;
  for (const name of Object.keys(require("./package.json").dependencies))
    process.stdout.write(name + "@" + lock["node_modules/" + name].version + " ");')
sums=$(cd "$out" && sha256sum -- *)
{
  printf '# Built by scripts/build-playground.sh from %s\n' "${versions% }"
  echo "$sums"
} >"$out/SHA256SUMS"

if [ "${1:-}" = "--check" ]; then
  # Compare what is served: a committed NAME.gz decompressed against NAME.
  status=0
  for f in "$out"/*; do
    name=$(basename "$f")
    if [ -e "$dest/$name.gz" ]; then
      gunzip -c "$dest/$name.gz" | cmp -s "$f" - || { echo "$dest/$name.gz differs from a fresh build" >&2; status=1; }
    else
      cmp -s "$f" "$dest/$name" || { echo "$dest/$name differs from a fresh build" >&2; status=1; }
    fi
  done
  for f in "$dest"/*; do
    [ -e "$out/$(basename "${f%.gz}")" ] || { echo "$f is not part of a fresh build" >&2; status=1; }
  done
  [ "$status" = 0 ] && echo "playground assets match a fresh build"
  exit "$status"
fi
node "$src/gzip.mjs" "$out"
# Every file in $dest comes from the build: files of an older build go.
rm -f -- "$dest"/*
cp "$out"/* "$dest/"
echo "playground assets rebuilt in $dest"

#!/usr/bin/env bash
# Rebuilds the Playground's assets in web/static/playground from the npm
# packages pinned below, byte for byte: each tarball is checked against the
# integrity hash npm published for it before anything is taken out of it.
# The files and their licences are committed; the binary embeds them, so the
# Playground fetches nothing from any other host.
#
#   ./scripts/build-playground.sh          rebuild the files in place
#   ./scripts/build-playground.sh --check  fail if the committed files differ
set -euo pipefail
cd "$(dirname "$0")/.."

# package@version  integrity (from `npm view <package@version> dist.integrity`)
pins=(
  "graphiql@4.1.2 sha512-rNlzQIAzm6i2KBXmVQWBgLvt0TloxFVB2d18bukvdsvjEuFDHsKx5IVOomL1W1o5WW+tE54+ioHb2AEKzO2cUg=="
  "react@18.2.0 sha512-/3IjMdb2L9QbBdWiW5e3P2/npwMBaU9mHCSCUzNln0ZCYbcfTsGbTJrU/kGemdH2IWmB2ioZ+zkxtmq6g09fGQ=="
  "react-dom@18.2.0 sha512-6IMTriUmvsjHUjNtEDudZfuDQUoWXVxKHhlEGSk81n4YFS+r/Kl99wXiwlVXtPBtJenozv2P+hxDsw9eA7Xo6g=="
)
# file in the package -> file served
files=(
  "graphiql package/graphiql.min.js graphiql.min.js"
  "graphiql package/graphiql.min.css graphiql.min.css"
  "graphiql package/LICENSE LICENSE.graphiql"
  "react package/umd/react.production.min.js react.production.min.js"
  "react package/LICENSE LICENSE.react"
  "react-dom package/umd/react-dom.production.min.js react-dom.production.min.js"
  "react-dom package/LICENSE LICENSE.react-dom"
)

dest=web/static/playground
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=$work/out
mkdir -p "$out"

for pin in "${pins[@]}"; do
  read -r spec integrity <<<"$pin"
  name=${spec%@*}
  tarball=$(cd "$work" && npm pack --silent "$spec")
  got="sha512-$(openssl dgst -sha512 -binary "$work/$tarball" | base64 -w0)"
  if [ "$got" != "$integrity" ]; then
    echo "$spec: integrity $got, want $integrity" >&2
    exit 1
  fi
  mkdir -p "$work/$name"
  tar -xzf "$work/$tarball" -C "$work/$name"
done
for f in "${files[@]}"; do
  read -r name from to <<<"$f"
  cp "$work/$name/$from" "$out/$to"
done
sums=$(cd "$out" && sha256sum -- *)
{
  printf '# Built by scripts/build-playground.sh from %s\n' "$(printf '%s ' "${pins[@]%% *}")"
  echo "$sums"
} >"$out/SHA256SUMS"

if [ "${1:-}" = "--check" ]; then
  for f in "$out"/*; do
    cmp -s "$f" "$dest/$(basename "$f")" || { echo "$dest/$(basename "$f") differs from a fresh build" >&2; exit 1; }
  done
  echo "playground assets match a fresh build"
  exit 0
fi
find "$dest" -maxdepth 1 -type f ! -name 'index.html' ! -name 'playground.js' ! -name 'playground.css' -delete
cp "$out"/* "$dest/"
echo "playground assets rebuilt in $dest"

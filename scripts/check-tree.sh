#!/usr/bin/env bash
# Fails when a tracked file is a compiled executable (ELF, Mach-O, PE, or
# any file with the executable bit that is not a script) or larger than
# 2 MB: build output does not belong in the tree. The vendored Playground
# assets (web/static/playground, built by scripts/build-playground.sh and
# checked against SHA256SUMS) are the one folder allowed to be large.
set -euo pipefail
cd "$(dirname "$0")/.."

limit=$((2 * 1024 * 1024))
status=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue # deleted in the work tree
  magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
    7f454c46 | cffaedfe | cefaedfe | feedfacf | feedface | cafebabe | 4d5a*)
      echo "$f is a compiled executable: remove it from git and ignore it" >&2
      status=1
      continue
      ;;
  esac
  if [ -x "$f" ] && [ "$(head -c 2 "$f")" != '#!' ]; then
    echo "$f is executable but not a script" >&2
    status=1
  fi
  size=$(stat -c %s "$f")
  if [ "$size" -gt "$limit" ] && [[ "$f" != web/static/playground/* ]]; then
    echo "$f is $size bytes, over 2 MB: build output or data does not belong in the tree" >&2
    status=1
  fi
done < <(git ls-files -z)
[ "$status" = 0 ] && echo "no binaries or large files tracked"
exit "$status"

# Shared by the scripts in this folder: start what tests and benchmarks need.
# Source it; it defines functions only.

# log prints a step's name with the script's time so far, so that a run's
# output says where its minutes went.
log() { printf '==> [%ss] %s\n' "$SECONDS" "$*" >&2; }

# as_root runs a command as root, through sudo when we are not root.
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
  log "installing $* with apt-get"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# pg_bindir prints the newest installed PostgreSQL's bin directory.
pg_bindir() {
  local dir
  dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$dir" ] && [ -x "$dir/initdb" ] && echo "$dir"
}

# run_pg runs a PostgreSQL server program; initdb and postgres refuse root,
# so as root they run as the postgres user.
run_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# free_port prints a loopback TCP port nobody listens on, from $1 upwards.
free_port() {
  local port=$1
  while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done
  echo "$port"
}

# ensure_postgres makes CMPAY_TEST_DATABASE_URL point at a PostgreSQL server.
# If it is set already, that server is used. Otherwise a throwaway cluster
# is created in a temporary directory (installing PostgreSQL with apt-get
# where missing) and stopped when the calling script exits. It also exports
# CMPAY_PG_BIN, the server's bin directory, for tests that run their own.
ensure_postgres() {
  local bin
  bin=$(pg_bindir) || { apt_install postgresql; bin=$(pg_bindir); } ||
    { echo "PostgreSQL is not installed and apt-get could not install it" >&2; return 1; }
  export CMPAY_PG_BIN=$bin
  if [ -n "${CMPAY_TEST_DATABASE_URL:-}" ]; then
    log "using PostgreSQL at CMPAY_TEST_DATABASE_URL"
    return 0
  fi

  CMPAY_PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/cmpay-pg.XXXXXX")
  trap stop_postgres EXIT # from here, so that a failed start leaves nothing behind
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql postgres
    chown postgres "$CMPAY_PG_DIR"
  fi
  run_pg "$bin/initdb" -D "$CMPAY_PG_DIR/data" -U postgres -A trust -E UTF8 --no-sync >"$CMPAY_PG_DIR/initdb.log" 2>&1 ||
    { cat "$CMPAY_PG_DIR/initdb.log" >&2; return 1; }
  # A port nobody listened on a moment ago can still be refused: another
  # program's connection may hold it as its own (ephemeral) end, which
  # free_port cannot see. Then the next port is tried, a few times.
  local port=54329 try seen
  for try in 1 2 3 4 5; do
    port=$(free_port "$port")
    log "starting a throwaway PostgreSQL ($("$bin/postgres" --version | awk '{print $3}')) on 127.0.0.1:$port"
    seen=0 # pg_ctl appends: read this try's lines only
    if [ -f "$CMPAY_PG_DIR/server.log" ]; then seen=$(wc -l <"$CMPAY_PG_DIR/server.log"); fi
    # Durability is not under test here; speed is welcome.
    run_pg "$bin/pg_ctl" -D "$CMPAY_PG_DIR/data" -l "$CMPAY_PG_DIR/server.log" -w -t 60 \
      -o "-p $port -k $CMPAY_PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=500 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
      start >/dev/null && break
    if [ "$try" = 5 ] || ! tail -n "+$((seen + 1))" "$CMPAY_PG_DIR/server.log" | grep "could not create any TCP/IP sockets" >/dev/null; then
      cat "$CMPAY_PG_DIR/server.log" >&2
      return 1
    fi
    port=$((port + 1))
  done
  export CMPAY_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
}

stop_postgres() {
  [ -n "${CMPAY_PG_DIR:-}" ] || return 0
  run_pg "$CMPAY_PG_BIN/pg_ctl" -D "$CMPAY_PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$CMPAY_PG_DIR"
}

# ensure_chromium installs Debian's Chromium for the real-browser tests and
# makes those tests fail, not skip, if it is still missing.
ensure_chromium() {
  if ! command -v chromium >/dev/null 2>&1 && [ -z "${CHROMIUM_PATH:-}" ]; then
    apt_install chromium
  fi
  export CMPAY_REQUIRE_BROWSER=1
}

# ensure_node installs Node.js where missing, then the pinned npm packages
# of the GraphQL over HTTP audit (scripts/graphql-http-audit). The
# TypeScript client (clients/typescript) needs Node.js 20.19 or newer, as
# vite 8 under its tests does: an older one (Debian 12's package is 18) is
# refused here with that reason rather than failing somewhere in npm.
ensure_node() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    apt_install nodejs npm
  fi
  if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)'; then
    echo "Node.js $(node --version) is too old: clients/typescript needs 20.19 or newer" >&2
    return 1
  fi
  if [ ! -d scripts/graphql-http-audit/node_modules/graphql-http ]; then
    log "installing the graphql-http audit (npm ci)"
    npm ci --silent --no-audit --no-fund --prefix scripts/graphql-http-audit
  fi
}

# Steps run side by side: start_step NAME CMD... runs CMD in the background
# with its output in a file; finish_step NAME waits for it, prints that
# output, and fails (returns CMD's status) if CMD failed. Output is shown
# whole and in the order the steps are finished, not interleaved. CMD runs
# where `set -e` does not apply: a function given as CMD must return its
# failures itself.
CMPAY_STEPS_DIR=
declare -A CMPAY_STEP_PIDS
start_step() {
  local name=$1
  shift
  [ -n "$CMPAY_STEPS_DIR" ] || CMPAY_STEPS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/cmpay-steps.XXXXXX")
  log "started: $name"
  (
    s=$(date +%s)
    status=0
    "$@" || status=$?
    echo "($name: $(($(date +%s) - s))s)"
    exit "$status"
  ) >"$CMPAY_STEPS_DIR/$name.log" 2>&1 &
  CMPAY_STEP_PIDS[$name]=$!
}
finish_step() {
  local name=$1 status=0
  wait "${CMPAY_STEP_PIDS[$name]}" || status=$?
  log "finished: $name"
  cat "$CMPAY_STEPS_DIR/$name.log" >&2
  unset 'CMPAY_STEP_PIDS[$name]'
  if [ "$status" != 0 ]; then
    echo "$name failed (exit status $status)" >&2
    return "$status"
  fi
}

# stop_steps ends the steps still running, with every process they
# started (when the script stops early: one step failed, or Ctrl-C), and
# removes their output; for the calling script's EXIT trap.
stop_steps() {
  local pid alive ended=() tries
  for pid in "${CMPAY_STEP_PIDS[@]}"; do
    mapfile -t -O "${#ended[@]}" ended < <(kill_tree "$pid")
  done
  for pid in "${CMPAY_STEP_PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  # Then wait (up to 10 s) until their descendants are gone too: a go
  # command still ending could write into a folder about to be removed.
  for ((tries = 0; tries < 100; tries++)); do
    alive=0
    for pid in "${ended[@]}"; do
      if kill -0 "$pid" 2>/dev/null; then alive=1; fi
    done
    [ "$alive" = 1 ] || break
    sleep 0.1
  done
  [ -z "$CMPAY_STEPS_DIR" ] || rm -rf "$CMPAY_STEPS_DIR"
}

# kill_tree ends a process and its descendants, the children first, and
# prints their ids.
kill_tree() {
  local child
  for child in $(pgrep -P "$1"); do
    kill_tree "$child"
  done
  kill "$1" 2>/dev/null || true
  echo "$1"
}

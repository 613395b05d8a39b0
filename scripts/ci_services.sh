#!/usr/bin/env bash
# Make sure this machine's own PostgreSQL 15 (+ pgvector, pg_trgm) and Redis are up, create a fresh
# database for one CI run, and print the env to use on the last two lines:
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db>
#   REDIS_URL=redis://127.0.0.1:6379/<n>
# Run as root. Idempotent. Progress goes to stderr so stdout stays easy to parse.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
log() { echo "[ci_services] $*" >&2; }
# Noisy tools write to a log that is shown only when they fail.
LOG=$(mktemp /tmp/ci_services.XXXXXX.log)
quiet() { "$@" >>"$LOG" 2>&1 || { tail -n 40 "$LOG" >&2; log "failed: $*"; exit 1; }; }

PGBIN=/usr/lib/postgresql/15/bin
PGHOST=127.0.0.1 PGPORT=5432 PGUSER=postgres
export PGHOST PGPORT PGUSER
WORK=/var/tmp/memoryhub-ci-services   # scratch for the pgvector source build; kept between runs
pg_version() { dpkg-query -W -f='${Version}' postgresql-15 2>/dev/null || true; }
psql_t1() { PGOPTIONS="-c client_min_messages=warning" psql -d template1 -X -q -v ON_ERROR_STOP=1 "$@"; }

# --- packages ---------------------------------------------------------------------------------
log "apt-get update"
# Not fatal: with everything already installed, a run must not depend on the archive being reachable.
apt-get update -q >>"$LOG" 2>&1 || log "warning: apt-get update failed; using the package lists apt has"
PG_BEFORE=$(pg_version)
missing=()
for p in postgresql-server-dev-15 build-essential dpkg-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  quiet apt-get install -y -q "${missing[@]}"
fi
# The dev package may pull a newer postgresql-15 in place; the running server must then be restarted.
PG_UPGRADED=0
[ "$(pg_version)" != "$PG_BEFORE" ] && PG_UPGRADED=1

# --- pgvector: Debian 12 has no PG 15 package, so build Debian 13's source package -------------
if [ ! -f /usr/lib/postgresql/15/lib/vector.so ]; then
  log "building pgvector from trixie's source package"
  # Use the archive apt already uses; its address is read here, never written down.
  DEBIAN_URI=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  rm -rf "$WORK"
  mkdir -p "$WORK/apt/lists/partial" "$WORK/apt/cache/archives/partial" "$WORK/src"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $DEBIAN_URI trixie main" \
    > "$WORK/apt/sources.list"
  # A private list/cache so the machine's own apt configuration is left untouched.
  APTO=(-o "Dir::Etc::SourceList=$WORK/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
        -o "Dir::State::Lists=$WORK/apt/lists" -o "Dir::Cache=$WORK/apt/cache")
  chown _apt "$WORK/src" 2>/dev/null || true   # lets apt download without its "unsandboxed" warning
  quiet apt-get "${APTO[@]}" update -q
  (cd "$WORK/src" && quiet apt-get "${APTO[@]}" source -q pgvector)
  SRC=$(ls -d "$WORK"/src/pgvector-*/ | head -1)
  # OPTFLAGS="" avoids -march=native, so the .so runs on any CPU of this kind.
  quiet make -C "$SRC" -j"$(nproc)" PG_CONFIG=$PGBIN/pg_config OPTFLAGS=""
  quiet make -C "$SRC" install PG_CONFIG=$PGBIN/pg_config
fi

# --- PostgreSQL: the machine's own cluster on 127.0.0.1:5432 ------------------------------------
CLUSTER_VER=$(ls /etc/postgresql | head -1)
pg_start() {
  pg_isready -q || pg_ctlcluster --skip-systemctl-redirect "$CLUSTER_VER" main start >&2 || true
  for _ in $(seq 60); do pg_isready -q && return 0; sleep 0.5; done
  log "PostgreSQL did not come up on $PGHOST:$PGPORT"; return 1
}
pg_restart() {
  log "restarting PostgreSQL $CLUSTER_VER/main"
  pg_ctlcluster --skip-systemctl-redirect "$CLUSTER_VER" main stop -m fast >&2 || true
  pg_start
}
pg_start
if [ "$PG_UPGRADED" = 1 ]; then
  log "postgresql-15 changed ($PG_BEFORE -> $(pg_version))"
  pg_restart
fi
# Extensions in template1 are inherited by every new database, Django's test database included.
if ! psql_t1 -c 'CREATE EXTENSION IF NOT EXISTS vector' 2>/dev/null; then
  pg_restart   # a server started before an in-place upgrade may fail to load the new .so
  psql_t1 -c 'CREATE EXTENSION IF NOT EXISTS vector'
fi
psql_t1 -c 'CREATE EXTENSION IF NOT EXISTS pg_trgm'

# --- Redis on 127.0.0.1:6379 ---------------------------------------------------------------------
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  log "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log >&2
fi
for _ in $(seq 50); do
  [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ] && break; sleep 0.2
done
[ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ] || { log "Redis did not answer PONG"; exit 1; }

# --- Old CI databases (name carries the epoch second it was made), best effort ------------------
NOW=$(date +%s)
psql -d postgres -X -At -c "SELECT datname FROM pg_database WHERE datname ~ '^(test_)?memoryhub_ci_[0-9]+_'" 2>/dev/null |
while read -r old; do
  ts=$(sed -E 's/^(test_)?memoryhub_ci_([0-9]+)_.*/\2/' <<<"$old")
  if [ $((NOW - ts)) -gt 86400 ]; then
    log "dropping old database $old"
    dropdb --if-exists --force "$old" >&2 || true
  fi
done || true

# --- A fresh database and Redis db number for this run ------------------------------------------
DB="memoryhub_ci_${NOW}_$(printf '%04x%04x' $RANDOM $RANDOM)"
createdb "$DB"
REDIS_DB=$((RANDOM % 15 + 1))
rm -f "$LOG"
log "ready: database $DB, Redis db $REDIS_DB"
echo "DATABASE_URL=postgres://postgres@127.0.0.1:5432/$DB"
echo "REDIS_URL=redis://127.0.0.1:6379/$REDIS_DB"

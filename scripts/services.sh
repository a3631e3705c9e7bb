#!/usr/bin/env bash
# Services some tests use, from Debian's packages: a PostgreSQL server on 127.0.0.1:5432 with a role
# incr (password incr) that may create databases, and PostgreSQL's JDBC driver
# (tests/test_postgres_metastore.py; bench/race.py --postgres). Best effort: where it cannot install
# or start them (no root, no apt-get), it says so and those tests skip, naming what is missing.
set -uo pipefail
say() { echo "services: $*" >&2; }
need=()
command -v pg_ctlcluster >/dev/null || need+=(postgresql)
[ -f /usr/share/java/postgresql.jar ] || need+=(libpostgresql-jdbc-java)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    say "not installing ${need[*]} (needs root and apt-get): the PostgreSQL metastore test will skip"
    exit 0
  fi
  say "installing ${need[*]} from Debian's packages"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"; } >/tmp/incr-services-apt.log 2>&1; then
    say "apt-get failed (see /tmp/incr-services-apt.log): the PostgreSQL metastore test will skip"
    exit 0
  fi
fi
[ "$(id -u)" = 0 ] || { say "not root: not starting PostgreSQL"; exit 0; }
version=$(pg_lsclusters -h 2>/dev/null | awk 'NR == 1 {print $1}')
if [ -z "$version" ]; then
  version=$(ls /usr/lib/postgresql | sort -n | tail -1)
  pg_createcluster "$version" main >/dev/null
fi
if ! pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" {print $4}' | grep -q online; then
  pg_ctlcluster "$version" main start || { say "PostgreSQL $version did not start"; exit 0; }
fi
runuser -u postgres -- psql -q -v ON_ERROR_STOP=1 <<'SQL' || say "could not create the role incr"
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'incr') THEN
    CREATE ROLE incr LOGIN CREATEDB PASSWORD 'incr';
  END IF;
END $$;
SQL
say "PostgreSQL $version on 127.0.0.1:5432, role incr"

# shellcheck shell=bash
# Test databases for the federated tests: a real PostgreSQL and a real
# MariaDB, each on a free port in a temporary data directory, with a user
# that has a password. Source this file, then call
#
#	dpsql_db_start    # installs what is missing, starts both, exports
#	                  # DPSQL_TEST_POSTGRES and DPSQL_TEST_MYSQL
#	dpsql_db_stop     # stops both and removes their directories
#
# The URLs have the federated connection form without a table:
#	postgresql://dpsql:PW@127.0.0.1:PORT/dpsqltest
#	mysql://dpsql:PW@127.0.0.1:PORT/dpsqltest
# Needs root for apt-get (only when a server is missing) and to run
# PostgreSQL as the postgres user.

dpsql_db_free_port() {
	python3 - <<'PY' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
PY
}

dpsql_db_pg_bin() {
	local d
	for d in /usr/lib/postgresql/*/bin; do
		if [ -x "$d/postgres" ]; then echo "$d"; fi
	done | sort -V | tail -1
}

dpsql_db_install() {
	local need=()
	[ -n "$(dpsql_db_pg_bin)" ] || need+=(postgresql)
	command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
	if [ ${#need[@]} -gt 0 ]; then
		apt-get update
		DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}"
	fi
}

dpsql_db_start() {
	dpsql_db_install || return 1
	DPSQL_DB_DIR=$(mktemp -d /tmp/dpsql-db.XXXXXX)
	chmod 755 "$DPSQL_DB_DIR"
	export DPSQL_DB_DIR
	local pw="pw-$RANDOM$RANDOM"

	# PostgreSQL, as the postgres user (it refuses to run as root).
	local pgbin pgport run
	pgbin=$(dpsql_db_pg_bin)
	pgport=$(dpsql_db_free_port)
	mkdir -p "$DPSQL_DB_DIR/pg"
	run=()
	if [ "$(id -u)" = 0 ]; then
		chown postgres "$DPSQL_DB_DIR/pg"
		run=(runuser -u postgres --)
	fi
	echo "$pw" >"$DPSQL_DB_DIR/pgpw"
	chmod 644 "$DPSQL_DB_DIR/pgpw"
	"${run[@]}" "$pgbin/initdb" -D "$DPSQL_DB_DIR/pg/data" -U postgres --auth=scram-sha-256 \
		--pwfile="$DPSQL_DB_DIR/pgpw" >"$DPSQL_DB_DIR/pg-init.log" 2>&1 || { cat "$DPSQL_DB_DIR/pg-init.log"; return 1; }
	"${run[@]}" "$pgbin/pg_ctl" -D "$DPSQL_DB_DIR/pg/data" -l "$DPSQL_DB_DIR/pg/log" -w \
		-o "-p $pgport -k $DPSQL_DB_DIR/pg -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=256MB" \
		start >/dev/null || { cat "$DPSQL_DB_DIR/pg/log"; return 1; }
	PGPASSWORD="$pw" "$pgbin/psql" -q -h 127.0.0.1 -p "$pgport" -U postgres -d postgres -v ON_ERROR_STOP=1 \
		-c "CREATE ROLE dpsql LOGIN SUPERUSER PASSWORD '$pw'" -c "CREATE DATABASE dpsqltest OWNER dpsql" || return 1
	export DPSQL_TEST_POSTGRES="postgresql://dpsql:$pw@127.0.0.1:$pgport/dpsqltest"

	# MariaDB, with grant tables and a password user.
	local myport mybase
	myport=$(dpsql_db_free_port)
	mybase="$DPSQL_DB_DIR/my"
	mkdir -p "$mybase"
	mariadb-install-db --no-defaults --user=root --datadir="$mybase/data" --auth-root-authentication-method=normal \
		>"$DPSQL_DB_DIR/my-init.log" 2>&1 || { cat "$DPSQL_DB_DIR/my-init.log"; return 1; }
	/usr/sbin/mariadbd --no-defaults --user=root --datadir="$mybase/data" --socket="$mybase/sock" \
		--port="$myport" --bind-address=127.0.0.1 --pid-file="$mybase/pid" --log-error="$mybase/log" \
		--innodb-buffer-pool-size=256M --innodb-flush-log-at-trx-commit=0 --skip-log-bin >"$mybase/out" 2>&1 &
	local i
	for i in $(seq 1 100); do
		mariadb --no-defaults -uroot --socket="$mybase/sock" -e "SELECT 1" >/dev/null 2>&1 && break
		sleep 0.2
	done
	mariadb --no-defaults -uroot --socket="$mybase/sock" -e "
		CREATE DATABASE dpsqltest CHARACTER SET utf8mb4;
		CREATE USER 'dpsql'@'127.0.0.1' IDENTIFIED BY '$pw';
		CREATE USER 'dpsql'@'localhost' IDENTIFIED BY '$pw';
		GRANT ALL ON *.* TO 'dpsql'@'127.0.0.1' WITH GRANT OPTION;
		GRANT ALL ON *.* TO 'dpsql'@'localhost' WITH GRANT OPTION;" || { cat "$mybase/log"; return 1; }
	export DPSQL_TEST_MYSQL="mysql://dpsql:$pw@127.0.0.1:$myport/dpsqltest"
	echo "test databases: PostgreSQL on 127.0.0.1:$pgport, MariaDB on 127.0.0.1:$myport ($DPSQL_DB_DIR)"
}

dpsql_db_stop() {
	[ -n "${DPSQL_DB_DIR:-}" ] && [ -d "$DPSQL_DB_DIR" ] || return 0
	local pgbin run=()
	pgbin=$(dpsql_db_pg_bin)
	[ "$(id -u)" = 0 ] && run=(runuser -u postgres --)
	if [ -f "$DPSQL_DB_DIR/pg/data/postmaster.pid" ]; then
		"${run[@]}" "$pgbin/pg_ctl" -D "$DPSQL_DB_DIR/pg/data" -m fast -w stop >/dev/null 2>&1
	fi
	if [ -f "$DPSQL_DB_DIR/my/pid" ]; then
		local pid
		pid=$(cat "$DPSQL_DB_DIR/my/pid")
		kill "$pid" 2>/dev/null
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
	fi
	rm -rf "$DPSQL_DB_DIR"
	unset DPSQL_DB_DIR DPSQL_TEST_POSTGRES DPSQL_TEST_MYSQL
}

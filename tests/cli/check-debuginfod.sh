# Sourced by tests/run-checks.sh (uses OUT, T, check/ok/bad/skp): debug
# files from debuginfod.  libdw (Debian's 0.188) asks the servers of
# DEBUGINFOD_URLS through dwfl_standard_find_debuginfo, the callback the
# library uses: a stripped binary whose debug file only a local debuginfod
# server has is named.  The server and the client run in a network
# namespace of their own, so the server is on a loopback only.
RES="$OUT/tests/resolve"
if ! command -v debuginfod > /dev/null || ! command -v debuginfod-find > /dev/null; then
	skp "debuginfod: package debuginfod not installed (guest/lib.sh DS_USER_PKGS has it)"
elif [ "$(id -u)" != 0 ] || ! command -v ip > /dev/null || ! unshare -n true 2> /dev/null; then
	skp "debuginfod: needs root, unshare and ip (a network namespace with only a loopback)"
else
	D="$T/dinfod"
	mkdir -p "$D/srv"
	printf 'int dinfod_fn(int x) { return x * 7; }\nint main(int c, char **v) { (void)v; return dinfod_fn(c); }\n' > "$D/p.c"
	cc -g -O1 -o "$D/srv/p" "$D/p.c"
	strip -o "$D/p-s" "$D/srv/p"
	dva=$(nm "$D/srv/p" | awk '$3 == "dinfod_fn" { print $1 }')
	dbid=$(readelf -n "$D/srv/p" | sed -n 's/.*Build ID: *//p')
	unshare -n bash -c "
		ip link set lo up || exit 1
		debuginfod -F -p 18002 -d '$D/db.sqlite' -t 0 -g 0 '$D/srv' > '$D/server.log' 2>&1 &
		srv=\$!
		trap 'kill \$srv; wait \$srv' EXIT
		export DEBUGINFOD_URLS=http://127.0.0.1:18002
		# until the server has indexed the file (its own cache for the polls)
		for i in \$(seq 1 100); do
			DEBUGINFOD_CACHE_PATH='$D/poll' debuginfod-find debuginfo $dbid > /dev/null 2>&1 && break
			rm -rf '$D/poll'
			sleep 0.2
		done
		DEBUGINFOD_CACHE_PATH='$D/cache' '$RES' '$D/p-s' $dva > '$D/with.txt' 2>&1
		unset DEBUGINFOD_URLS
		'$RES' '$D/p-s' $dva > '$D/without.txt' 2>&1
		true
	"
	check "debuginfod: a stripped binary named by the debug file a local server has" \
		bash -c "grep -qx 'dinfod_fn +0x1 p-s $dbid' '$D/with.txt' && grep -q '^\[p-s+0x' '$D/without.txt'" ||
		cat "$D/with.txt" "$D/without.txt" "$D/server.log"
fi

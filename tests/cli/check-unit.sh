# Sourced by tests/run-checks.sh (uses DS, DSAN, OUT, T, check/ok/bad/skp):
# deferstack-profiler.service, the always-on profiler the deferstack package
# ships (not enabled): systemd-analyze verify accepts it, it runs as its own
# user with CAP_PERFMON only, and its ExecStart, with the settings of
# /etc/default/deferstack (debian/deferstack.default) substituted, records
# windows and their pprof profiles on this host; ExecReload (SIGHUP) starts
# a window, SIGTERM (systemctl stop) closes the last one.

UNIT=debian/deferstack.deferstack-profiler.service
DEFAULTS=debian/deferstack.default
UD="$T/unit"
mkdir -p "$UD"
uwindows() { ls "$1".* 2> /dev/null | grep -E "^$1\.[0-9]{16}\$"; }
# the value of a unit setting (the last one)
unit_get() { sed -n "s/^$1=//p" "$UNIT" | tail -1; }

check "unit: runs as the user deferstack with CAP_PERFMON only, no new privileges" \
	bash -c "[ '$(unit_get User)' = deferstack ] && [ '$(unit_get CapabilityBoundingSet)' = CAP_PERFMON ] &&
		[ '$(unit_get AmbientCapabilities)' = CAP_PERFMON ] && [ '$(unit_get NoNewPrivileges)' = yes ]"
check "unit: ProtectSystem=strict, ProtectHome=read-only, the real /tmp (perf maps), state in /var/lib/deferstack" \
	bash -c "[ '$(unit_get ProtectSystem)' = strict ] && [ '$(unit_get ProtectHome)' = read-only ] &&
		[ '$(unit_get PrivateTmp)' = no ] && [ '$(unit_get StateDirectory)' = deferstack ] &&
		[ '$(unit_get EnvironmentFile)' = /etc/default/deferstack ]"
check "unit: Restart=on-failure, reload is SIGHUP, not enabled by the package (--no-enable --no-start)" \
	bash -c "[ '$(unit_get Restart)' = on-failure ] && [ '$(unit_get ExecReload)' = '/bin/kill -HUP \$MAINPID' ] &&
		grep -q 'dh_installsystemd .*--no-enable --no-start' debian/rules"
# every \${VAR} of ExecStart is set in the defaults
missing=$(grep -o '\${[A-Z_]*}' <<< "$(unit_get ExecStart)" | tr -d '${}' |
	while read -r v; do grep -q "^$v=." "$DEFAULTS" || echo "$v"; done)
check "unit: every setting ExecStart uses is in /etc/default/deferstack${missing:+ (missing: $missing)}" \
	test -z "$missing"

if ! command -v systemd-analyze > /dev/null; then
	skp "unit: systemd-analyze verify (systemd not installed; guest/lib.sh DS_USER_PKGS has it)"
else
	# the installed paths of the binary and the settings are here
	# (an absolute path: make check's $DS is relative)
	sed "s#/usr/bin/deferstack #$(readlink -f "$DS") #; s#^EnvironmentFile=.*#EnvironmentFile=$PWD/$DEFAULTS#" \
		"$UNIT" > "$UD/deferstack-profiler.service"
	systemd-analyze verify --man=no "$UD/deferstack-profiler.service" > "$UD/verify.out" 2>&1
	rc=$?
	check "unit: systemd-analyze verify, no warning" \
		bash -c "[ $rc -eq 0 ] && [ ! -s '$UD/verify.out' ] || { cat '$UD/verify.out'; false; }"
fi

paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
if [ "$(id -u)" != 0 ] && [ "$paranoid" -gt 1 ]; then
	skp "unit: its ExecStart (needs root or perf_event_paranoid <= 1)"
else
	# ExecStart as systemd runs it: the defaults, 1 s windows, a temporary
	# directory for /var/lib/deferstack
	cmd=$(unit_get ExecStart | sed "s#^/usr/bin/deferstack #$DSAN #")
	(
		set -a
		. "$DEFAULTS"
		WINDOW=1s
		OUTPUT="$UD/state/profile.data"
		PPROF_DIR="$UD/state/pprof"
		mkdir -p "$UD/state"
		eval "exec $cmd"
	) 2> "$UD/run.err" & up=$!
	"$OUT/tests/burn" 4 & ub=$!
	sleep 1.6
	# ExecReload with $MAINPID
	reload=$(unit_get ExecReload | sed "s/\$MAINPID/$up/")
	$reload
	rrc=$?
	sleep 1.6
	kill -TERM $up
	wait $up
	rc=$?
	kill $ub 2> /dev/null; wait $ub 2> /dev/null
	uw=$(uwindows "$UD/state/profile.data" | tr '\n' ' ')
	nuw=$(echo $uw | wc -w)
	npb=0
	for w in $uw; do
		[ -s "$UD/state/pprof/${w##*/}.pb.gz" ] && npb=$((npb + 1))
	done
	check "unit's ExecStart with the defaults: reload ($reload) and exit 0 on SIGTERM, >= 3 windows (1 s, a reload), a .pb.gz each ($nuw windows, $npb profiles)" \
		bash -c "[ $rc -eq 0 ] && [ $rrc -eq 0 ] && [ $nuw -ge 3 ] && [ $npb -eq $nuw ] &&
			! grep -q 'Sanitizer\|runtime error' '$UD/run.err' || { ls -R '$UD/state'; cat '$UD/run.err'; false; }"
	n=0
	for w in $uw; do
		"$DS" report -i "$w" --folded > "$w.folded" 2> /dev/null && n=$((n + 1))
	done
	check "unit's windows: each read by report, burn_leaf named ($n)" \
		bash -c "[ $n -eq \$(echo $uw | wc -w) ] && cat '$UD'/state/*.folded | grep -q burn_leaf"
	if command -v go > /dev/null; then
		n=0
		for w in $uw; do
			HOME="$T" timeout 300 go tool pprof -top -symbolize=none \
				"$UD/state/pprof/$(basename "$w").pb.gz" > /dev/null 2>&1 && n=$((n + 1))
		done
		check "unit's pprof profiles: each read by go tool pprof ($n)" \
			test "$n" -eq "$(echo $uw | wc -w)"
	fi
fi

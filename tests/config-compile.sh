#!/usr/bin/env bash
# The series compiles, warning-free with W=1, under real configurations, not
# only the guest's tiny one: Debian's own 6.12 amd64 configuration (what its
# linux-image ships, from linux-config-6.12), Debian's PREEMPT_RT flavour, and
# Debian's with PREEMPT_NONE and with !SMP; and 32-bit x86 (i386 defconfig with
# perf and BPF), where UNWIND_USER is off. Only the objects the series touches
# are built (make prepares the rest), so each configuration takes a minute or
# two, not a full build. Any error, or a W=1 warning that names a touched file,
# fails.
#
#   tests/config-compile.sh [debian|rt|preempt-none|nosmp|i386 ...]
set -uo pipefail
. "$(dirname "$0")/../guest/lib.sh"

variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(debian rt preempt-none nosmp i386)
ds_need_pkgs "${DS_KERNEL_PKGS[@]}"
"$DS_ROOT/guest/build-kernel.sh" fast >/dev/null || exit 1	# the patched tree
cfgdir=/usr/src/linux-config-6.12
mapfile -t files < <(git -C "$DS_SRC" diff --name-only debian-base..HEAD -- '*.c')
mapfile -t objs < <(printf '%s\n' "${files[@]}" | sed -n 's/\.c$/.o/p')
[ ${#objs[@]} -gt 0 ] || ds_die "the series touches no .c file?"
pattern=$(printf '%s\n' "${files[@]}" | sed 's/[.]/\\./g' | paste -sd'|')

# configure VARIANT OBJDIR: write OBJDIR/.config; prints the make arguments.
configure() {
	local v=$1 obj=$2 base=none
	mkdir -p "$obj"
	case $v in
	i386)
		make -s -C "$DS_SRC" O="$obj" ARCH=i386 defconfig >/dev/null || return 1
		"$DS_SRC/scripts/config" --file "$obj/.config" -e PERF_EVENTS -e BPF_SYSCALL \
			-e BPF_EVENTS -e KPROBES -e UPROBE_EVENTS -e FTRACE -e FTRACE_SYSCALLS
		echo ARCH=i386
		;;
	*)
		[ "$v" = rt ] && base=rt
		xz -dc "$cfgdir/config.amd64_${base}_amd64.xz" > "$obj/.config" || return 1
		# Debian's signing keys and certificates are not in the source tree.
		"$DS_SRC/scripts/config" --file "$obj/.config" \
			--set-str SYSTEM_TRUSTED_KEYS "" --set-str SYSTEM_REVOCATION_KEYS "" \
			--set-str MODULE_SIG_KEY "certs/signing_key.pem" -d MODULE_SIG_ALL
		case $v in
		preempt-none) "$DS_SRC/scripts/config" --file "$obj/.config" \
			-e PREEMPT_NONE -d PREEMPT_VOLUNTARY -d PREEMPT -d PREEMPT_DYNAMIC ;;
		nosmp) "$DS_SRC/scripts/config" --file "$obj/.config" -d SMP ;;
		esac
		echo ARCH=x86_64
		;;
	esac
}

# want VARIANT OBJDIR: check that the configuration is the one asked for.
want() {
	local c=$2/.config
	case $1 in
	rt) grep -qx 'CONFIG_PREEMPT_RT=y' "$c" ;;
	preempt-none) grep -qx 'CONFIG_PREEMPT_NONE=y' "$c" ;;
	nosmp) ! grep -q '^CONFIG_SMP=y' "$c" ;;
	i386) ! grep -q '^CONFIG_UNWIND_USER=y' "$c" && grep -qx 'CONFIG_PERF_EVENTS=y' "$c" ;;
	debian) grep -qx 'CONFIG_UNWIND_USER=y' "$c" ;;
	esac
}

# configured OBJ OBJDIR: does the configuration build OBJ? Walks up its
# directories: a name on an obj-$(CONFIG_X) line needs CONFIG_X=y; a name on no
# obj- line (obj-y lists continued over several lines) counts as built.
configured() {
	local path=${1%.o} token dir line sym bits=32 sized='^(.+)_(32|64)\.o$'
	token=${path##*/}.o
	while dir=$(dirname "$path"); [ "$dir" != . ]; do
		line=$(grep -E "^obj-[^+:=]*[+:]?=.*(^|[[:space:]])$token([[:space:]]|$)" \
			"$DS_SRC/$dir/Makefile" 2>/dev/null | head -1)
		# NAME_32.o / NAME_64.o also listed as NAME_$(BITS).o (x86's
		# signal_32.o, signal_64.o, on an obj-y line): built for the
		# configuration's word size, else only by its own obj- line.
		if [[ $token =~ $sized ]] &&
		   grep -qF "${BASH_REMATCH[1]}_\$(BITS).o" "$DS_SRC/$dir/Makefile" 2>/dev/null; then
			grep -qx 'CONFIG_64BIT=y' "$2/.config" && bits=64
			if [ "${BASH_REMATCH[2]}" = "$bits" ]; then
				line=
			elif [ -z "$line" ]; then
				return 1
			fi
		fi
		sym=$(sed -n 's/^obj-\$(\(CONFIG_[A-Z0-9_]*\)).*/\1/p' <<< "$line")
		[ -z "$sym" ] || grep -qx "$sym=y" "$2/.config" || return 1
		path=$dir
		token=${dir##*/}/
	done
	return 0
}

pass=0 fail=0
mkdir -p "$DS_BUILD/logs"
for v in "${variants[@]}"; do
	obj=$DS_BUILD/obj-cfg-$v
	log=$DS_BUILD/logs/config-$v.log
	start=$SECONDS
	if ! arch=$(configure "$v" "$obj") ||
	   ! make -s -C "$DS_SRC" O="$obj" "$arch" olddefconfig > "$log" 2>&1; then
		echo "not ok - $v: cannot configure (log: $log)"
		fail=$((fail + 1))
		continue
	fi
	if ! want "$v" "$obj"; then
		echo "not ok - $v: the configuration is not what it should be ($obj/.config)"
		fail=$((fail + 1))
		continue
	fi
	# Objects the configuration does not build are skipped (make -k).
	targets=()
	for o in "${objs[@]}"; do
		configured "$o" "$obj" && targets+=("$o")
	done
	make -k -s -C "$DS_SRC" O="$obj" "$arch" CC="ccache gcc" W=1 -j"$DS_JOBS" \
		"${targets[@]}" >> "$log" 2>&1
	errors=$(grep -E ': (error|fatal error):|\*\*\* .*Error' "$log" | grep -v 'ignored' | head -5)
	warns=$(grep -E "($pattern):[0-9]+:[0-9]+: warning" "$log" | head -5)
	built=0
	for o in "${targets[@]}"; do [ -e "$obj/$o" ] && built=$((built + 1)); done
	if [ -n "$errors$warns" ] || [ $built -eq 0 ] || [ $built -ne ${#targets[@]} ]; then
		echo "not ok - $v: $built of ${#targets[@]} touched objects built (log: $log)"
		printf '%s\n' "$errors" "$warns" | sed '/^$/d; s/^/    /'
		fail=$((fail + 1))
	else
		echo "ok - $v: $built of ${#objs[@]} touched objects in this configuration, built with W=1, no warning in them ($((SECONDS - start)) s)"
		pass=$((pass + 1))
	fi
done
echo "config-compile: $pass passed, $fail failed"
[ $fail -eq 0 ]

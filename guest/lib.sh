# Shared helpers for the guest harness scripts (sourced, not run).
# Paths, stage timing and installing missing Debian packages.

DS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DS_BUILD=${DS_BUILD:-$DS_ROOT/build}
DS_SRC=$DS_BUILD/linux
DS_JOBS=${DS_JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/deferstack-ccache}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
# Kernel objects embed __FILE__ and build paths; make ccache hits independent of
# the clone's location.
export CCACHE_BASEDIR=$DS_BUILD
export CCACHE_NOHASHDIR=1
# Kbuild has gcc write each object's dependencies (-Wp,-MMD): ccache takes
# them from there rather than running the preprocessor on a miss. A cold
# build of the fast config's kernel/ and mm/: 146 s, 106 s with this, 108 s
# without ccache. The price: a changed .config misses for every object (no
# match on the preprocessed text), where it used to hit for most
# (CCACHE_NODEPEND=true turns it off).
[ -n "${CCACHE_NODEPEND:-}" ] || export CCACHE_DEPEND=true

ds_log() { printf '[deferstack %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
ds_die() { ds_log "error: $*"; exit 1; }
# ds_locked LOCKFILE CMD...: CMD (a shell function too) run with LOCKFILE's
# flock held, one caller at a time; returns CMD's status.
ds_locked() {
	local lock=$1 fd rc
	shift
	exec {fd}> "$lock"
	flock "$fd"
	"$@"
	rc=$?
	exec {fd}>&-
	return $rc
}

# ds_stage NAME CMD...: run a stage and print how long it took.
ds_stage() {
	local name=$1 start rc
	shift
	start=$(date +%s)
	ds_log "stage $name: start"
	"$@"
	rc=$?
	ds_log "stage $name: $((  $(date +%s) - start ))s (rc=$rc)"
	echo "$name $(( $(date +%s) - start ))" >> "$DS_BUILD/stage-times"
	return $rc
}

# ds_guest_image KERNEL: print the bzImage of a guest kernel, building it
# (fast, debug) or fetching it (ref, Debian sid's stock 7.x) first.
ds_guest_image() {
	case $1 in
	fast|debug) "$DS_ROOT/guest/build-kernel.sh" "$1" ;;
	ref) "$DS_ROOT/guest/fetch-reference.sh" ;;
	*) ds_log "no guest kernel named $1"; return 1 ;;
	esac
}

# What a kernel splat looks like on a guest's console (any one fails a run).
DS_SPLAT_RE='WARNING:|BUG:|Oops|Kernel panic|kernel BUG|KASAN|UBSAN|possible recursive locking|'
DS_SPLAT_RE+='circular locking|suspicious RCU usage|scheduling while atomic|Call Trace:|'
DS_SPLAT_RE+='general protection fault|unreferenced object|INFO: task .* blocked'

# ds_need_pkgs PKG...: apt-get install the packages that are not installed.
ds_need_pkgs() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	ds_log "installing: ${missing[*]}"
	[ "$(id -u)" -eq 0 ] || ds_die "need root to install ${missing[*]}"
	if [ ! -e "$DS_BUILD/.apt-updated" ]; then
		apt-get update -qq || ds_die "apt-get update failed"
		mkdir -p "$DS_BUILD" && touch "$DS_BUILD/.apt-updated"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null || ds_die "apt-get install ${missing[*]} failed"
}

# Every Debian package that a script of this project calls a command from.
# tests/fresh-root.sh installs exactly DS_ALL_PKGS into a minimal bookworm root
# and checks there that every command the scripts use resolves: a command
# added to a script needs its package here.
# Kernel build: rsync for headers_install, perl/bc/flex/bison for Kbuild;
# python3-ply and python3-git for checkpatch.pl's SPDX check.
DS_KERNEL_PKGS=(linux-source-6.12 linux-config-6.12 build-essential flex bison bc perl rsync libelf-dev
	libssl-dev ccache clang lld llvm xz-utils git cpio kmod python3 python3-ply python3-git)
# Guest: trinity is copied into the initramfs (tests/guest/trinity.sh).
DS_GUEST_PKGS=(qemu-system-x86 busybox-static cpio gzip trinity)
# User space: the library, CLI, unit tests, fuzzing (libclang-rt-14-dev: clang's
# libFuzzer and ASan runtimes); upstream perf 6.1 reads our files; groff renders
# the man page in make check; chromium loads the SVG flame graph headless;
# pkgconf: make check builds a program with pkg-config's flags for the
# installed library. libdw-dev (libdwfl) finds debug files, its static link
# needs liblzma-dev and libbz2-dev; libc6-dbg and g++ (a C++ workload) for the
# debug-symbol tests; golang-go: `go tool pprof` reads report --pprof's output;
# time: /usr/bin/time -v (peak RSS) in bench/file-bench.sh; debuginfod (the
# server and debuginfod-find) and iproute2 (ip: the loopback of the server's
# network namespace): libdwfl fetches a debug file from a local debuginfod;
# systemd: systemd-analyze verifies deferstack-profiler.service; procps: its
# ExecReload, /bin/kill, which the test runs.
DS_USER_PKGS=(make gcc g++ clang llvm libclang-rt-14-dev libelf-dev libdw-dev zlib1g-dev
	liblzma-dev libbz2-dev libzstd-dev libcmocka-dev linux-perf groff-base chromium
	libc6-dbg golang-go pkgconf time gcc-multilib debuginfod iproute2 systemd procps
	patch binutils)
# Debian sid roots (perf 7.x) and the fresh-machine check.
DS_CHROOT_PKGS=(debootstrap debian-archive-keyring file)
# Debian packages (make deb, pkg/build-deb.sh): dpkg-buildpackage (dpkg-dev),
# dh (debhelper), lintian; the build dependencies of debian/control; man-db:
# tests/cli/installed.sh reads the installed man page with man.
DS_DEB_PKGS=(dpkg-dev debhelper lintian build-essential libdw-dev libelf-dev zlib1g-dev man-db)
# Kernel packages (kernel/build-deb.sh, make bindeb-pkg): dpkg-buildpackage
# and the dh_* commands of the generated debian/rules; openssl generates the
# module signing key of configurations with MODULE_SIG; pahole (dwarves) for
# BTF when debug info is kept; xz and gzip unpack compressed configurations.
DS_KDEB_PKGS=(dpkg-dev debhelper openssl dwarves xz-utils gzip kmod)
DS_ALL_PKGS=("${DS_KERNEL_PKGS[@]}" "${DS_GUEST_PKGS[@]}" "${DS_USER_PKGS[@]}"
	"${DS_CHROOT_PKGS[@]}" "${DS_DEB_PKGS[@]}" "${DS_KDEB_PKGS[@]}")

# ds_install_all: what README's two commands need, installed where missing.
ds_install_all() { ds_need_pkgs "${DS_ALL_PKGS[@]}"; }

#!/usr/bin/env bash
# The UAPI of our series against mainline's: build tests/uapi_compat.c once
# against our patched kernel's exported headers and once against Debian sid's
# 7.x linux-libc-dev (fetched with the reference kernel's private apt setup).
set -uo pipefail
. "$(dirname "$0")/../guest/lib.sh"
ref=$DS_BUILD/ref
fail=0

# Ours: the headers as `make headers_install` exports them.
"$DS_ROOT/guest/build-kernel.sh" fast >/dev/null || exit 1
make -s -C "$DS_SRC" O="$DS_BUILD/obj-fast" ARCH=x86_64 headers_install \
	INSTALL_HDR_PATH="$DS_BUILD/uapi-ours" >/dev/null || exit 1
# Mainline's: sid's linux-libc-dev, through the reference's apt configuration.
"$DS_ROOT/guest/fetch-reference.sh" >/dev/null || exit 1
if [ ! -d "$ref/libc-dev" ]; then
	aptopts=(-o Dir::Etc::sourcelist="$ref/apt/sources.list" -o Dir::Etc::sourceparts=-
		-o Dir::State::Lists="$ref/apt/lists" -o Dir::State::status="$ref/apt/status"
		-o Dir::Cache="$ref/apt/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
	mkdir -p "$ref/apt/cache/archives/partial" "$ref/libc-dev-deb"
	(cd "$ref/libc-dev-deb" && apt-get "${aptopts[@]}" -qq download linux-libc-dev) ||
		ds_die "cannot download sid's linux-libc-dev"
	dpkg-deb -x "$ref"/libc-dev-deb/*.deb "$ref/libc-dev"
fi
for which in ours sid; do
	inc=$DS_BUILD/uapi-ours/include
	[ $which = sid ] && inc=$ref/libc-dev/usr/include
	out=$DS_BUILD/uapi-compat-$which
	if ! cc -std=c11 -Wall -Wextra -Werror -nostdinc -isystem "$inc" \
		-isystem /usr/include/x86_64-linux-gnu -isystem /usr/include \
		-isystem "$(cc -print-file-name=include)" -I"$DS_ROOT/include" \
		-o "$out" "$DS_ROOT/tests/uapi_compat.c"; then
		echo "uapi ($which): does not compile against its headers"
		fail=1
		continue
	fi
	printf '%s: ' "$which"
	"$out" || fail=1
done
exit $fail

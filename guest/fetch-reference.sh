#!/usr/bin/env bash
# Fetch the reference kernel: Debian sid's stock linux-image (7.x), which ships
# the mainline deferred-callchain ABI. Uses a private apt configuration with a
# sid source, so the machine's own apt sources are never touched. Cached in
# build/ref/; prints the vmlinuz path.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ref=$DS_BUILD/ref
if [ -f "$ref/vmlinuz" ]; then
	echo "$ref/vmlinuz"
	exit 0
fi
mkdir -p "$ref/apt/lists/partial" "$ref/apt/cache/archives/partial" "$ref/deb"
cat > "$ref/apt/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main
SRC
: > "$ref/apt/status"
aptopts=(-o Dir::Etc::sourcelist="$ref/apt/sources.list" -o Dir::Etc::sourceparts=-
	-o Dir::State::Lists="$ref/apt/lists" -o Dir::State::status="$ref/apt/status"
	-o Dir::Cache="$ref/apt/cache" -o APT::Get::List-Cleanup=0 -o Debug::NoLocking=1
	-o APT::Sandbox::User=root)
ds_log "fetching Debian sid package lists for the reference kernel"
apt-get "${aptopts[@]}" -qq update >&2 || ds_die "apt-get update (sid) failed"
# linux-image-amd64 depends on the versioned image package; take its name.
pkg=$(apt-cache "${aptopts[@]}" depends linux-image-amd64 |
	awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
[ -n "$pkg" ] || ds_die "cannot resolve linux-image-amd64 in sid"
case $pkg in linux-image-7.*) ;; *) ds_log "warning: sid's kernel is $pkg, not 7.x" ;; esac
# 7.x splits the image: the vmlinuz is in linux-binary-VERSION.
pkgs=("$pkg")
bin=$(apt-cache "${aptopts[@]}" depends "$pkg" | awk '/Depends: linux-binary-/ { print $2; exit }')
[ -n "$bin" ] && pkgs+=("$bin")
ds_log "downloading ${pkgs[*]}"
rm -rf "$ref/deb"/* "$ref/root"
(cd "$ref/deb" && apt-get "${aptopts[@]}" -qq download "${pkgs[@]}" >&2) ||
	ds_die "download of ${pkgs[*]} failed"
for deb in "$ref"/deb/*.deb; do
	dpkg-deb -x "$deb" "$ref/root"
done
# Debian 7.x keeps it in /usr/lib/modules/VERSION/vmlinuz, older ones in /boot.
vmlinuz=$(find "$ref/root" -name 'vmlinuz*' -type f | head -1)
[ -n "$vmlinuz" ] || ds_die "no vmlinuz in ${pkgs[*]}"
cp "$vmlinuz" "$ref/vmlinuz"
echo "${pkg#linux-image-}" > "$ref/version"
rm -rf "$ref/root" "$ref/apt/cache"
echo "$ref/vmlinuz"

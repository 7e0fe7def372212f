#!/usr/bin/env bash
# Build the Debian packages of the user space (make deb): deferstack (the CLI
# and its man page), libdeferstack1 (libdeferstack.so.1) and
# libdeferstack-dev (headers, static library, deferstack.pc), plus their
# -dbgsym packages, from debian/ with debhelper, and check them with lintian.
#
#   pkg/build-deb.sh [OUTDIR]      (default out/deb; prints the .deb paths)
#
# dpkg-buildpackage writes next to the source directory and leaves
# debian/.debhelper, debian/tmp and out/ behind, so it runs on a copy of the
# tree (what git tracks plus the working tree's changes) in build/deb/; the
# .deb, .changes and .buildinfo files are moved to OUTDIR. Fails when the
# Makefile's VERSION and debian/changelog disagree, or when lintian reports
# an error or a warning that debian/*.lintian-overrides does not explain.
set -euo pipefail
. "$(dirname "$0")/../guest/lib.sh"

outdir=${1:-$DS_ROOT/out/deb}
ds_need_pkgs "${DS_DEB_PKGS[@]}"

version=$(sed -n 's/^VERSION := //p' "$DS_ROOT/Makefile")
debver=$(dpkg-parsechangelog -l "$DS_ROOT/debian/changelog" -S Version)
# a native package: the Debian version is the upstream version
[ "$version" = "$debver" ] ||
	ds_die "Makefile VERSION $version but debian/changelog $debver: add a changelog entry"

work=$DS_BUILD/deb
src=$work/deferstack-$version
rm -rf "$work"
mkdir -p "$src" "$outdir"
(cd "$DS_ROOT" && git ls-files -z --cached --others --exclude-standard |
	tar --null --ignore-failed-read -T - -cf -) | tar -C "$src" -xf -

t0=$(date +%s)
ds_log "dpkg-buildpackage -b in $src (log: $work/build.log)"
if ! (cd "$src" && dpkg-buildpackage -b -us -uc -j"$DS_JOBS" > "$work/build.log" 2>&1); then
	tail -30 "$work/build.log" >&2
	ds_die "dpkg-buildpackage failed (log: $work/build.log)"
fi
ds_log "packages built in $(( $(date +%s) - t0 ))s"

rm -f "$outdir"/*.deb "$outdir"/*.changes "$outdir"/*.buildinfo
mv "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$outdir/"
changes=$(ls "$outdir"/deferstack_"$version"_*.changes)

# Info-level tags are shown too (-I) and, like warnings and errors, must be
# fixed, or overridden in debian/PACKAGE.lintian-overrides with a comment that
# says why (deferstack: its systemd-only unit).
lintian -I --fail-on error,warning,info "$changes" > "$work/lintian.log" 2>&1 || {
	cat "$work/lintian.log" >&2
	ds_die "lintian: $changes has tags without an override"
}
ds_log "lintian: no tags"
for f in "$outdir"/*.deb; do
	ds_log "$(basename "$f"): $(du -k "$f" | cut -f1) KiB"
	echo "$f"
done

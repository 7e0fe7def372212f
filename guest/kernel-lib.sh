# The patched kernel tree and config checks, shared by guest/build-kernel.sh
# (the guest kernels) and kernel/build-deb.sh (installable packages).
# Sourced after guest/lib.sh.

# ds_extract_source: Debian's linux-source-6.12 in build/linux, once, as a
# git tree whose first commit (tag debian-base) is the tarball.
ds_extract_source() {
	local tarball=/usr/src/linux-source-6.12.tar.xz
	[ -d "$DS_SRC/.git" ] && git -C "$DS_SRC" rev-parse -q --verify debian-base >/dev/null &&
		return 0
	[ -f "$tarball" ] || ds_die "$tarball missing (linux-source-6.12)"
	rm -rf "$DS_SRC" "$DS_BUILD/linux-source-6.12"
	tar -C "$DS_BUILD" -xf "$tarball"
	mv "$DS_BUILD/linux-source-6.12" "$DS_SRC"
	# Debian's .gitignore ignores the whole top level; track everything.
	git -C "$DS_SRC" init -q
	git -C "$DS_SRC" add -A -f
	git -C "$DS_SRC" -c user.name=deferstack -c user.email=ci@deferstack.invalid \
		commit -q -m "Debian linux-source-6.12 $(dpkg-query -W -f='${Version}' linux-source-6.12)"
	git -C "$DS_SRC" tag debian-base
}

# ds_series_files: the series (kernel/patches/), then the test-only patches
# the harness adds on top (kernel/test-patches/: the NMI test PMU and test
# hooks, which no distribution kernel should carry and which are off unless
# a config turns them on). Every kernel built here, guest or package, comes
# from the one tree with both, so that their builds share it.
ds_series_files() {
	local p dir
	for dir in patches test-patches; do
		while read -r p; do
			case $p in ''|'#'*) continue ;; esac
			echo "$DS_ROOT/kernel/$dir/$p"
		done < "$DS_ROOT/kernel/$dir/series"
	done
}

# ds_apply_series: bring build/linux to debian-base + kernel/patches/series
# + kernel/test-patches/series.
# A tree whose commits already are the series (a developer's tree the patches
# were exported from) is left alone, so that its build stays warm.
ds_apply_series() {
	local want have p n=0 patches
	mapfile -t patches < <(ds_series_files)
	want=$( [ ${#patches[@]} -eq 0 ] || cat "${patches[@]}" | git patch-id --stable | cut -d' ' -f1)
	have=$(git -C "$DS_SRC" format-patch --stdout debian-base..HEAD | git patch-id --stable |
		cut -d' ' -f1)
	if [ "$want" = "$have" ] && [ -z "$(git -C "$DS_SRC" status --porcelain --untracked-files=no)" ]; then
		return 0
	fi
	if [ -n "$(git -C "$DS_SRC" status --porcelain --untracked-files=no)" ] &&
	   [ -z "${DS_FORCE:-}" ]; then
		ds_die "$DS_SRC has uncommitted changes; commit them or set DS_FORCE=1"
	fi
	git -C "$DS_SRC" checkout -q -f -B series debian-base
	for p in "${patches[@]}"; do
		git -C "$DS_SRC" -c user.name=deferstack -c user.email=ci@deferstack.invalid \
			am -q --keep-cr "$p" ||
			{ git -C "$DS_SRC" am --abort; ds_die "patch $(basename "$p") does not apply"; }
		n=$((n + 1))
	done
	ds_log "applied $n patches"
}

# ds_kernel_tree: the source with the series applied, ready to build.
# tests/run-all.sh builds kernels in the background while other stages run:
# one script at a time extracts the tree or applies the series (git takes
# its index lock even to look).
ds_kernel_tree() {
	mkdir -p "$DS_BUILD"
	ds_locked "$DS_BUILD/.kernel-tree.lock" ds_kernel_tree_locked
}
ds_kernel_tree_locked() { ds_extract_source && ds_apply_series; }

# ds_config_check CONFIG FRAGMENT...: every CONFIG_X=V line of the fragments
# is in CONFIG (X=n: X unset). merge_config and olddefconfig silently drop a
# symbol whose dependencies are unmet: this makes that loud. Returns 1 if any
# symbol did not stick.
ds_config_check() {
	local config=$1 line sym val bad=0 f
	shift
	for f in "$@"; do
		while read -r line; do
			case $line in CONFIG_*=*) ;; *) continue ;; esac
			sym=${line%%=*}
			val=${line#*=}
			if [ "$val" = n ]; then
				grep -q "^$sym=" "$config" && { ds_log "$sym should be unset"; bad=1; }
			else
				grep -qx "$line" "$config" || { ds_log "$line did not stick"; bad=1; }
			fi
		done < "$f"
	done
	return $bad
}

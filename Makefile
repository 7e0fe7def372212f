# deferstack user space: library, CLI, tests, fuzz target, benchmark.
# Outputs go to out/.  Targets: all static dyn check fuzz bench bench-file bench-real
# bench-always-on
# install deb clean
CC      ?= cc
CLANG   ?= clang
OUT     ?= out
CFLAGS  ?= -O2 -g
WARN    := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror
CPPFLAGS += -Iinclude -Ilib -DDS_VERSION='"$(VERSION)"'
LDLIBS  := -ldw -lelf -lz -lzstd -lstdc++
STATIC_LDLIBS := -ldw -lelf -lz -llzma -lbz2 -lzstd -lstdc++
SAN     := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
FUZZ_TIME ?= 60
# make install [PREFIX=/usr/local] [LIBDIR=$(PREFIX)/lib] [DESTDIR=]
#              [INSTALL_CLI=$(OUT)/deferstack | $(OUT)/dyn/deferstack]
PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
MANDIR  ?= $(PREFIX)/share/man
VERSION := 0.6.0
# the soname's number: bumped when the ABI of an existing function or struct
# changes (1 since 0.3.0: sz first in ds_event, ds_ring, ds_sym_info, ...);
# a new function only goes into a new version node of lib/libdeferstack.map
SOVERSION := 1
SONAME  := libdeferstack.so.$(SOVERSION)
# the library exports only its API (DS_API); internals stay hidden
LIBVIS  := -fvisibility=hidden

LIB_SRC := lib/event.c lib/ring.c lib/perfdata.c lib/merge.c lib/stitch.c \
           lib/symbols.c lib/fold.c lib/hash.c lib/buildid.c lib/flame.c \
           lib/profile.c lib/ptext.c lib/pprof.c lib/symtab.c lib/extsyms.c lib/cxxname.c \
           lib/file.c lib/pipeline.c
LIB_HDR := include/deferstack/deferstack.h include/deferstack/perf_abi.h lib/internal.h \
           lib/hash.h lib/output.h lib/profile.h lib/symtab.h
CLI_SRC := tools/deferstack.c tools/pipeline.c tools/record.c tools/record-events.c \
           tools/record-opts.c tools/record-windows.c tools/record-pprof.c \
           tools/record-evparse.c \
           tools/record-tracing.c tools/record-drain.c \
           tools/record-synth.c tools/record-maps.c tools/report.c tools/report-opts.c tools/script.c tools/convert.c \
           tools/stitch-file.c tools/util.c tools/sidedata.c tools/tab.c
CLI_HDR := tools/cli.h tools/record.h tools/tab.h
UNIT_SRC := $(wildcard tests/unit/test_*.c)

LIB_OBJ := $(LIB_SRC:%.c=$(OUT)/obj/%.o)
SAN_OBJ := $(LIB_SRC:%.c=$(OUT)/san/%.o)
PIC_OBJ := $(LIB_SRC:%.c=$(OUT)/pic/%.o)
# the file: the soname and the version's minor.patch (libdeferstack.so.1.6.0 for 0.6.0)
SO      := $(OUT)/$(SONAME).$(word 2,$(subst ., ,$(VERSION))).$(word 3,$(subst ., ,$(VERSION)))
# the CLI that make install installs: linked with the static library by
# default; the Debian package installs the one linked with libdeferstack.so.1
INSTALL_CLI ?= $(OUT)/deferstack

.PHONY: all static dyn deb check unit golden cli-tests e2e fuzz bench bench-file bench-real bench-always-on bench-all install clean

all: $(OUT)/libdeferstack.a $(OUT)/deferstack $(SO)

# tools/ (the CLI) is compiled without -Ilib: it is built on the public
# headers (include/deferstack/) only, as any user of the library is
SRC_CPPFLAGS = $(if $(filter tools/%,$<),$(filter-out -Ilib,$(CPPFLAGS)),$(CPPFLAGS))

$(OUT)/obj/%.o: %.c $(LIB_HDR) $(CLI_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(SRC_CPPFLAGS) $(WARN) $(CFLAGS) $(if $(filter lib/%,$<),$(LIBVIS)) -c $< -o $@

$(OUT)/san/%.o: %.c $(LIB_HDR) $(CLI_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(SRC_CPPFLAGS) $(WARN) -O1 -g $(SAN) $(if $(filter lib/%,$<),$(LIBVIS)) -c $< -o $@

$(OUT)/pic/%.o: %.c $(LIB_HDR)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARN) $(CFLAGS) -fPIC $(LIBVIS) -c $< -o $@

# libdeferstack.so.1: versioned symbols from an explicit export list
$(SO): $(PIC_OBJ) lib/libdeferstack.map
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=lib/libdeferstack.map \
		-Wl,--no-undefined -o $@ $(PIC_OBJ) $(LDLIBS)
	ln -sf $(notdir $@) $(OUT)/$(SONAME)
	ln -sf $(SONAME) $(OUT)/libdeferstack.so

$(OUT)/libdeferstack.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(OUT)/libdeferstack-san.a: $(SAN_OBJ)
	rm -f $@ && ar rcs $@ $^

$(OUT)/deferstack: $(CLI_SRC:%.c=$(OUT)/obj/%.o) $(OUT)/libdeferstack.a
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The CLI linked with libdeferstack.so.1 (what the deferstack .deb ships): it
# uses the exported API only (make check checks its objects' references).
dyn: $(OUT)/dyn/deferstack
$(OUT)/dyn/deferstack: $(CLI_SRC:%.c=$(OUT)/obj/%.o) $(SO)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) -L$(OUT) -ldeferstack $(LDLIBS)

# Statically linked CLI: libdw.a (libdwfl) needs libelf.a, zlib, liblzma
# (MiniDebugInfo), libbz2 and libzstd (compressed sections); __cxa_demangle
# comes from libstdc++.a.
static: $(OUT)/static/deferstack
$(OUT)/static/deferstack: $(CLI_SRC:%.c=$(OUT)/obj/%.o) $(OUT)/libdeferstack.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -static -o $@ $^ $(STATIC_LDLIBS)

# ---- tests: cmocka unit + golden tests (ASan+UBSan), CLI bad-input, host e2e
$(OUT)/san/deferstack: $(CLI_SRC:%.c=$(OUT)/san/%.o) $(OUT)/libdeferstack-san.a
	$(CC) $(SAN) -o $@ $^ $(LDLIBS)

$(OUT)/tests/%: tests/unit/%.c tests/unit/streams.h $(OUT)/libdeferstack-san.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/unit $(WARN) -O1 -g $(SAN) $< -o $@ \
		$(OUT)/libdeferstack-san.a $(LDLIBS) -lcmocka

UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(OUT)/tests/%)

check: $(UNIT_BIN) $(OUT)/san/deferstack $(OUT)/deferstack $(OUT)/tests/mkdata $(OUT)/tests/burn \
	$(SO) $(OUT)/tests/resolve $(OUT)/tests/cxxburn $(OUT)/tests/symcmp $(OUT)/tests/wincarry \
	$(OUT)/tests/mapcarry $(OUT)/tests/churn
	@$(MAKE) -s -C tests/unit/ehframe OUT=$(abspath $(OUT))/unit-ehframe check hostile \
		> $(OUT)/unit-ehframe.log 2>&1 || \
		{ tail -20 $(OUT)/unit-ehframe.log; echo "FAIL: tests/unit/ehframe (log: $(OUT)/unit-ehframe.log)"; exit 1; }
	@echo "PASS: tests/unit/ehframe: the pending .eh_frame decoder against readelf and hostile tables"
	@tests/run-checks.sh $(OUT) $(UNIT_BIN)

# ---- fuzz: libFuzzer target over the perf.data reader + merge + stitcher
$(OUT)/fuzz/fuzz_perfdata: tests/fuzz/fuzz_perfdata.c $(LIB_SRC) $(LIB_HDR)
	@mkdir -p $(dir $@)
	$(CLANG) $(CPPFLAGS) $(WARN) -O1 -g -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined \
		tests/fuzz/fuzz_perfdata.c $(LIB_SRC) -o $@ $(LDLIBS)

fuzz: $(OUT)/fuzz/fuzz_perfdata
	@mkdir -p $(OUT)/fuzz/corpus
	$(OUT)/fuzz/fuzz_perfdata -max_total_time=$(FUZZ_TIME) -max_len=65536 \
		-print_final_stats=1 $(OUT)/fuzz/corpus tests/fuzz/corpus

# ---- bench: synthetic >= 10M record stream through merge + stitcher
$(OUT)/bench/stitch_bench: bench/stitch_bench.c $(OUT)/libdeferstack.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARN) -O2 $< -o $@ $(OUT)/libdeferstack.a $(LDLIBS)

bench: $(OUT)/bench/stitch_bench
	$(OUT)/bench/stitch_bench $(BENCH_ARGS)

# ---- bench-file: 1 M-sample perf.data files (classic, deferred) through
# deferstack report --folded / script, perf script / report (6.1, sid's 7.x)
$(OUT)/bench/mkbench: bench/mkbench.c $(OUT)/libdeferstack.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARN) -O2 $< -o $@ $(OUT)/libdeferstack.a $(LDLIBS)

bench-file: $(OUT)/deferstack $(OUT)/bench/mkbench
	bench/file-bench.sh

# ---- bench-real: a real system-wide recording of this machine (perf record
# -F 10000 -g -a -- sleep 10, made at run time, never kept) through
# deferstack report --folded / script and perf script; the linearity case
bench-real: $(OUT)/deferstack $(OUT)/bench/symscale
	bench/real-bench.sh

# ---- bench-always-on: the whole guest at 99 Hz, deferstack record -a in
# windows against perf 7.x --switch-output (bench/RESULTS-always-on.md)
bench-always-on:
	bench/always-on.sh

# ---- bench-all: every benchmark (guest cost on both kernels, perf 7.x,
# the file benchmark, always-on) into bench/RESULTS.md; figures only
bench-all: $(OUT)/deferstack $(OUT)/bench/mkbench
	bench/run-all.sh

# the CLI, the shared and static library, headers, pkg-config file, man page
install: all $(INSTALL_CLI)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(PREFIX)/include/deferstack $(DESTDIR)$(MANDIR)/man1
	install -m 755 $(INSTALL_CLI) $(DESTDIR)$(PREFIX)/bin/deferstack
	install -m 644 $(OUT)/libdeferstack.a $(DESTDIR)$(LIBDIR)/libdeferstack.a
	install -m 755 $(SO) $(DESTDIR)$(LIBDIR)/$(notdir $(SO))
	ln -sf $(notdir $(SO)) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libdeferstack.so
	install -m 644 include/deferstack/deferstack.h include/deferstack/perf_abi.h \
		$(DESTDIR)$(PREFIX)/include/deferstack/
	sed -e 's|@PREFIX@|$(PREFIX)|; s|@LIBDIR@|$(LIBDIR)|; s|@VERSION@|$(VERSION)|' \
		lib/deferstack.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/deferstack.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/deferstack.pc
	install -m 644 man/deferstack.1 $(DESTDIR)$(MANDIR)/man1/deferstack.1

# Debian packages (libdeferstack1, libdeferstack-dev, deferstack) from
# debian/ with debhelper, checked with lintian, into $(OUT)/deb/
deb:
	pkg/build-deb.sh $(OUT)/deb

clean:
	rm -rf $(OUT)

$(OUT)/tests/mkdata: tests/cli/mkdata.c tests/unit/streams.h $(OUT)/libdeferstack.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/unit $(WARN) -O1 -g $< -o $@ $(OUT)/libdeferstack.a $(LDLIBS)

$(OUT)/tests/burn: tests/workload/burn.c
	@mkdir -p $(dir $@)
	$(CC) -O0 -g -fno-omit-frame-pointer -fno-inline $< -o $@

$(OUT)/tests/resolve: tests/cli/resolve.c tests/unit/streams.h $(OUT)/libdeferstack-san.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/unit $(WARN) -O1 -g $(SAN) $< -o $@ \
		$(OUT)/libdeferstack-san.a $(LDLIBS)

# record windows in defer mode, and the mappings carried between windows,
# on the CLI's own objects (not its main)
$(OUT)/tests/wincarry $(OUT)/tests/mapcarry: $(OUT)/tests/%: tests/cli/%.c \
		$(filter-out %/deferstack.o,$(CLI_SRC:%.c=$(OUT)/san/%.o)) $(OUT)/libdeferstack-san.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itools $(WARN) -O1 -g $(SAN) $< -o $@ $(filter %.o %.a,$^) $(LDLIBS)

# threads spinning and threads coming and going (window robustness tests)
$(OUT)/tests/churn: tests/workload/churn.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -fno-omit-frame-pointer $(WARN) $< -o $@ -lpthread

# C++ workload (demangling tests)
$(OUT)/tests/cxxburn: tests/workload/cxxburn.cc
	@mkdir -p $(dir $@)
	$(CXX) -O0 -g -fno-omit-frame-pointer $< -o $@

# the symbol table against libdwfl address by address (optimized: each
# libdwfl lookup scans a whole table)
$(OUT)/tests/symcmp: tests/cli/symcmp.c lib/symtab.h $(OUT)/libdeferstack.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(WARN) -O2 -g $< -o $@ $(OUT)/libdeferstack.a $(LDLIBS)

# linearity: distinct functions of one object resolved, against libdwfl
$(OUT)/bench/symscale: bench/symscale.c tests/unit/streams.h $(OUT)/libdeferstack.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/unit $(WARN) -O2 $< -o $@ $(OUT)/libdeferstack.a $(LDLIBS)

# Makefile — Tether for C users (GNU make).
#
#   make / make build   release libtether.so in .build/release/ (static Swift
#                       stdlib: at run time it needs only libuv and the C/C++
#                       runtime libraries, no Swift toolchain)
#   make deps           install libuv1-dev + pkg-config if missing; check swift
#   make run            build, then run tetherd (the state daemon) in the
#                       foreground; its first lines say how to talk to it
#   make demo           build, then build and run the in-process demo
#                       (examples-c/demo.c)
#   make lesson NAME=x  build, then run the lesson examples-c/x.c with its
#                       output; a daemon lesson beside a tetherd of its own
#   make test           swift build + swift test, release build, an install
#                       check, a 48 s fuzz run (TEST_FUZZ_SECONDS=18: fast
#                       18 s, watch, fastpath and store 10 s each), then the
#                       C harness (every lesson in examples-c/
#                       and every case in Tests/CTests/); the last line of
#                       output is "N passed, N failed, N skipped" (under
#                       CI=true a skip not on Tests/allowed-skips.txt fails:
#                       Tests/check-skips.sh, run.sh). CASE=name runs one
#                       case (or lesson), ONLY="a b" a few: only those,
#                       after the release build, with their own output
#   make install        PREFIX=/usr/local (default), DESTDIR honoured: the
#                       library, header, pkg-config file, tetherd, tetherctl,
#                       systemd units (system and user), man pages
#                       tetherd(8), tetherctl(1), tether(3) and bash, zsh
#                       and fish completions
#   make check-install  install into a temp prefix, check its pages,
#                       completions and units (Tests/install/check-docs.sh),
#                       and build a program there with nothing but pkg-config
#   make asan | tsan | valgrind    the C harness under a sanitizer (CASE= too)
#   make asan-daemon    tetherd itself under ASan (+ UBSan on its C parts):
#                       the daemon-backed C lessons and cases, the robustness
#                       test (ROBUSTNESS_SECONDS, 30) and a tetherctl workload
#                       against it; fails on any report (docs/robustness.md)
#   make valgrind-daemon  tetherd under valgrind --leak-check=full for a
#                       tetherctl workload ending in SIGTERM
#   make fuzz           libFuzzer + AddressSanitizer on tetherd's frame
#                       decoder and dispatcher, in process: the targets
#                       fast (FUZZ_SECONDS long, 60), watch, fastpath and
#                       store (half that each, at least 10 s); fails on a crash
#                       (docs/robustness.md; FUZZ_TARGETS="fast" for one)
#   make etcd           tetherd-etcd: tetherd with the etcd backend
#                       (Backends/Etcd; `tetherd --backend etcd:URL,…` runs it)
#   make etcd-test      two tetherds on a 3-member etcd cluster started on
#                       loopback (Tests/etcd/etcd_test.py; in make test too)
#   make robustness-etcd  the same under faults (killed and frozen members,
#                       the leader killed, hosts killed, compaction)
#   make robustness     tetherd under writers and watchers, killed with
#                       SIGKILL, its disk filled (root: a tmpfs), its store
#                       damaged; every guarantee checked; ROBUSTNESS_ARGS
#                       (e.g. "--seed 7 --duration 120")
#   make hostile       tetherd (release) against a hostile local uid
#                       (Tests/hostile/hostile.py --strict: the owner's
#                       p99 under 50 ms while nobody floods); needs root
#   make clean
#
# Variables: SWIFT (swift), CC (cc), PREFIX (/usr/local), DESTDIR.

SHELL := /bin/bash
.DEFAULT_GOAL := build

# A toolchain unpacked in /opt/swift but not on PATH (a non-login shell that
# skipped /etc/profile.d) is still found.
ifeq ($(shell command -v swift 2>/dev/null),)
  ifneq ($(wildcard /opt/swift/usr/bin/swift),)
    export PATH := /opt/swift/usr/bin:$(PATH)
  endif
endif

SWIFT ?= swift
PREFIX ?= /usr/local
DESTDIR ?=

VERSION := $(shell sed -n 's/^\#define TETHER_VERSION_STRING "\(.*\)"$$/\1/p' include/tether.h)
RELEASE_DIR := .build/release
LIB := $(RELEASE_DIR)/libtether.so
BIN := .build-ctests/bin

# The ThreadSanitizer build of the library lives in its own scratch path so it
# never disturbs the release build (.build-* is gitignored).
TSAN_SCRATCH := .build-tsan
TSAN_LIBDIR := $(TSAN_SCRATCH)/debug

# Flags for building a C program against the library in the work tree.
EXAMPLE_CFLAGS := -std=c99 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -Iinclude -ITests/CTests
EXAMPLE_LIBS = -L$(RELEASE_DIR) -ltether -Wl,-rpath,$(abspath $(RELEASE_DIR)) -lpthread -lm

# The fuzzer's build: every module instrumented (-sanitize=fuzzer,address),
# in its own scratch path.
FUZZ_SCRATCH := .build-fuzz
FUZZ_SECONDS ?= 60
# The bounded fuzz run inside `make test`: the fast target this long, the
# watch, fastpath and store targets half of it each, at least 10 s (48 s in
# all, as with three targets at 24 + 12 + 12).
TEST_FUZZ_SECONDS ?= 18

.PHONY: all build deps run lesson demo test swift-test install install-docs check-install asan tsan valgrind clean bench fuzz fuzz-build robustness hostile etcd etcd-test etcd-daemon-tests robustness-etcd \
	asan-daemon valgrind-daemon

all: build

deps:
	@bash scripts/install-deps.sh

# The static Foundation that tetherctl links (through swift-argument-
# parser) makes the linker warn that it uses mktemp(3); Foundation calls it
# only to name temporary files it then opens with O_EXCL, which is the safe
# use, so the warning is filtered out (RELEASE_BUILD does it for every
# target that builds the release).
RELEASE_BUILD = set -o pipefail; $(SWIFT) build -c release -Xswiftc -static-stdlib 2>&1 | { grep -v "the use of .mktemp. is dangerous" || true; }

build: deps
	@echo "$(SWIFT) build -c release -Xswiftc -static-stdlib"
	@$(RELEASE_BUILD)
	@test -f $(LIB) || { echo "make build: $(LIB) was not produced"; exit 1; }

# The main job: the daemon in the foreground (Ctrl-C stops it). Its
# address and data directory follow the XDG conventions (docs/daemon.md);
# TETHERD_ARGS adds options, e.g. TETHERD_ARGS="--memory --verbose". As
# root those are the installed service's places (/run/tether,
# /var/lib/tether): tetherd's first lines say so, and how to get a
# throwaway daemon instead (TETHERD_ARGS=--memory).
run: build
	@echo
	@exec $(RELEASE_DIR)/tetherd $(TETHERD_ARGS)

# One lesson of examples-c/, with its output: make lesson NAME=shared_counter.
# A daemon lesson (shared_counter, settings_service, seat_booking,
# daemon_restart) runs beside a tetherd of its own, as the harness runs it
# (temporary socket and store, restarted if the lesson kills it, stopped and
# removed after): nothing is left behind, and a `make run` daemon is not
# touched. (Run by hand against a daemon of yours, with TETHER_ADDRESS set,
# they work too, daemon_restart excepted: it kills its daemon.)
lesson: build
	@test -n "$(NAME)" || { echo "make lesson: which one? make lesson NAME=... with NAME one of:" \
	  $$(cd examples-c && ls *.c | sed 's/\.c$$//'); exit 2; }
	@test -f "examples-c/$(NAME).c" || { echo "make lesson: there is no examples-c/$(NAME).c"; exit 2; }
	@CASE="$(NAME)" LESSONS_ONLY=1 bash Tests/CTests/run.sh

demo: build
	@mkdir -p $(BIN)
	$(CC) $(EXAMPLE_CFLAGS) -o $(BIN)/demo examples-c/demo.c $(EXAMPLE_LIBS)
	@echo
	@$(BIN)/demo

# The Swift tests of the core, on a debug build of everything.
swift-test: deps
	$(SWIFT) build
	$(SWIFT) test

# Everything. A failing swift test, check-install or fuzz run does not stop the C
# examples: their results are handed to the harness, which runs last, counts
# them with its own, and prints the final "N passed, N failed" line (the
# exit status is non-zero if anything failed). Only a failed release build
# stops here, since there would be no library to test.
# CASE=name (a case of Tests/CTests/cases.h, or a lesson) runs just that one,
# after the release build alone (no Swift tests, install check or fuzz run),
# and shows its output; ONLY="a b" a few.
export CASE ONLY

test: deps
	@if [ -n "$(CASE)$(ONLY)" ]; then \
	  $(RELEASE_BUILD) || exit 1; \
	  exec bash Tests/CTests/run.sh; \
	fi; \
	swift_rc=0; mkdir -p .build; : > .build/swift-test.log; \
	{ $(SWIFT) build && $(SWIFT) test 2>&1 | tee .build/swift-test.log; test "$${PIPESTATUS[0]}" -eq 0; } || swift_rc=$$?; \
	skips_rc=0; bash Tests/check-skips.sh .build/swift-test.log || skips_rc=$$?; \
	$(RELEASE_BUILD) || exit 1; \
	install_rc=0; $(MAKE) --no-print-directory check-install || install_rc=$$?; \
	fuzz_rc=0; FUZZ_FRESH=1 $(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS) || fuzz_rc=$$?; \
	etcd_rc=0; $(MAKE) --no-print-directory etcd-test || etcd_rc=$$?; \
	$(MAKE) --no-print-directory etcd-daemon-tests || etcd_rc=$$?; \
	EXTRA_RESULTS="swift-test=$$swift_rc swift-skips=$$skips_rc check-install=$$install_rc fuzz=$$fuzz_rc etcd=$$etcd_rc" bash Tests/CTests/run.sh

install: build
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 0755 $(LIB) $(DESTDIR)$(PREFIX)/lib/libtether.so
	install -m 0644 include/tether.h $(DESTDIR)$(PREFIX)/include/tether.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' tether.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/tether.pc
	chmod 0644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/tether.pc
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/systemd/system $(DESTDIR)$(PREFIX)/lib/systemd/user
	install -m 0755 $(RELEASE_DIR)/tetherd $(RELEASE_DIR)/tetherctl $(DESTDIR)$(PREFIX)/bin/
	for kind in system user; do for unit in tetherd.service tetherd.socket; do \
	  sed -e 's|@PREFIX@|$(PREFIX)|g' systemd/$$kind/$$unit > $(DESTDIR)$(PREFIX)/lib/systemd/$$kind/$$unit; \
	  chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/$$kind/$$unit; done; done
	$(MAKE) --no-print-directory install-docs

# The man pages (committed: man/, see scripts/generate-man.sh) and the shell
# completions, which swift-argument-parser writes from the built commands
# (--generate-completion-script: the same bytes for the same parser, and
# always the installed binaries' own options).
MANDIR = $(DESTDIR)$(PREFIX)/share/man
SHAREDIR = $(DESTDIR)$(PREFIX)/share
install-docs:
	install -d $(MANDIR)/man1 $(MANDIR)/man3 $(MANDIR)/man8
	install -m 0644 man/tetherctl.1 $(MANDIR)/man1/tetherctl.1
	install -m 0644 man/tether.3 $(MANDIR)/man3/tether.3
	install -m 0644 man/tetherd.8 $(MANDIR)/man8/tetherd.8
	install -d $(SHAREDIR)/bash-completion/completions $(SHAREDIR)/zsh/site-functions $(SHAREDIR)/fish/vendor_completions.d
	set -e; for tool in tetherd tetherctl; do \
	  $(RELEASE_DIR)/$$tool --generate-completion-script bash > $(SHAREDIR)/bash-completion/completions/$$tool; \
	  $(RELEASE_DIR)/$$tool --generate-completion-script zsh > $(SHAREDIR)/zsh/site-functions/_$$tool; \
	  $(RELEASE_DIR)/$$tool --generate-completion-script fish > $(SHAREDIR)/fish/vendor_completions.d/$$tool.fish; \
	  chmod 0644 $(SHAREDIR)/bash-completion/completions/$$tool $(SHAREDIR)/zsh/site-functions/_$$tool \
	    $(SHAREDIR)/fish/vendor_completions.d/$$tool.fish; done

# Proves the installed pkg-config path works for a program outside the tree:
# counter.c is copied to a temp dir and built with only
# `pkg-config --cflags --libs tether`, then run without LD_LIBRARY_PATH, and
# must load the installed libtether.so (not the one in .build/).
check-install:
	@set -euo pipefail; \
	tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/tether-check-install.XXXXXX"); \
	trap 'rm -rf "$$tmp"' EXIT; \
	$(MAKE) --no-print-directory install PREFIX="$$tmp/prefix" DESTDIR= >"$$tmp/install.log" 2>&1 \
	  || { cat "$$tmp/install.log"; exit 1; }; \
	bash Tests/install/check-docs.sh "$$tmp/prefix"; \
	cp examples-c/counter.c Tests/CTests/check.h "$$tmp/"; \
	cd "$$tmp"; \
	export PKG_CONFIG_PATH="$$tmp/prefix/lib/pkgconfig"; \
	test "$$(pkg-config --modversion tether)" = "$(VERSION)" \
	  || { echo "check-install: pkg-config reports version $$(pkg-config --modversion tether), expected $(VERSION)"; exit 1; }; \
	$(CC) -std=c99 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -pthread \
	  -o counter counter.c $$(pkg-config --cflags --libs tether); \
	env -u LD_LIBRARY_PATH ./counter >counter.log 2>&1 \
	  || { echo "check-install: the installed counter failed:"; cat counter.log; exit 1; }; \
	loaded=$$(env -u LD_LIBRARY_PATH ldd ./counter | awk '/libtether/ {print $$3}'); \
	case "$$loaded" in "$$tmp"/prefix/lib/*) ;; \
	  *) echo "check-install: counter loaded libtether from '$$loaded', not the install"; exit 1 ;; esac; \
	echo "check-install: ok (tether $(VERSION) installed, counter built with pkg-config and run)"

# AddressSanitizer + UndefinedBehaviorSanitizer on the C side, against the
# release library (its mallocs and frees are still checked, leaks included).
asan: build
	SANITIZE=asan bash Tests/CTests/run.sh

# ThreadSanitizer on both sides: a debug build of the library with
# --sanitize=thread (no static stdlib: the TSan runtime must be shared with
# the executable), and the examples built with the Swift toolchain's clang,
# whose TSan runtime is the one that library was built for. The harness puts
# the toolchain's lib/swift/linux on LD_LIBRARY_PATH for the Swift runtime.
tsan: deps
	$(SWIFT) build -c debug --sanitize=thread --scratch-path $(TSAN_SCRATCH)
	SANITIZE=tsan TETHER_LIBDIR=$(TSAN_LIBDIR) bash Tests/CTests/run.sh

# The benchmark suite: Tether beside GObject, Qt 6 and Swift Observation, and
# tetherd beside Redis, in one run (installs the anchors' packages when
# missing, builds everything optimized, runs it, writes docs/benchmarks.md
# and docs/benchmarks.png). Only the daemon's section, keeping the rest of
# the report: make build && BENCH_SYSTEMS=daemon bash benchmarks/run.sh.
# Timing only; nothing in `make test` depends on it. BENCH_QUICK=1 in the
# environment: small sizes, report in .build-bench/ instead of docs/.
bench:
	@bash scripts/install-bench-deps.sh
	@$(MAKE) --no-print-directory build
	@CC="$(CC)" SWIFT="$(SWIFT)" bash benchmarks/run.sh

# libFuzzer on the frame decoder and the dispatcher (Sources/tetherd-fuzz,
# Sources/TetherDaemonFuzz): the toolchain's clang runtime, one process.
# SwiftPM gives the executable its main, which hands over to libFuzzer.
# (gold warns once per ASan symbol it cannot export: hundreds of lines of
# nothing, filtered out.) The release configuration (-O, whole-module, with
# Swift's checks and the sanitizer still on): a debug build ran 4.6 times
# fewer inputs a second, a debug one with -O a fifth fewer
# (docs/robustness.md, "The fuzzer").
fuzz-build: deps
	@echo "$(SWIFT) build -c release --product tetherd-fuzz --scratch-path $(FUZZ_SCRATCH) -Xswiftc -sanitize=fuzzer,address -Xswiftc -DTETHER_LIBFUZZER"
	@set -o pipefail; $(SWIFT) build -c release --product tetherd-fuzz --scratch-path $(FUZZ_SCRATCH) \
	  -Xswiftc -sanitize=fuzzer,address -Xswiftc -DTETHER_LIBFUZZER 2>&1 \
	  | { grep -v "Cannot export local symbol" || true; }

export FUZZ_TARGETS
fuzz: fuzz-build
	@bash Tests/fuzz/run.sh $(FUZZ_SECONDS)

# tetherd with the etcd backend (Backends/Etcd: gRPC and etcd's generated
# API in a package of their own, so that neither libtether.so nor the
# default build carries them): Backends/Etcd/.build/release/tetherd-etcd,
# which the default tetherd runs in its place when given --backend etcd:.
ETCD_DIR = Backends/Etcd
etcd: deps
	@set -o pipefail; cd $(ETCD_DIR) && $(SWIFT) build -c release -Xswiftc -static-stdlib 2>&1 | { grep -v "the use of .mktemp. is dangerous" || true; }

# Its tests (make test runs them on the debug build): two tetherds as two
# hosts on a 3-member etcd cluster this starts on loopback
# (Tests/etcd/etcd_test.py, docs/daemon.md "Several machines").
etcd-test: deps
	@set -o pipefail; cd $(ETCD_DIR) && $(SWIFT) build --product tetherd-etcd 2>&1 | { grep -v "the use of .mktemp. is dangerous" || true; }
	$(SWIFT) build --product tetherd
	python3 Tests/etcd/etcd_test.py --tetherd $(ETCD_DIR)/.build/debug/tetherd-etcd --sqlite-tetherd .build/debug/tetherd

# The daemon tests (DaemonTests, the PyPI varlink client's included)
# against a tetherd on etcd, apart from the documented differences
# (Tests/etcd/daemon-test-differences.txt); make test runs it.
etcd-daemon-tests: deps
	@set -o pipefail; cd $(ETCD_DIR) && $(SWIFT) build --product tetherd-etcd 2>&1 | { grep -v "the use of .mktemp. is dangerous" || true; }
	@set -o pipefail; mkdir -p .build; bash Tests/etcd/daemon-tests.sh $(ETCD_DIR)/.build/debug/tetherd-etcd 2>&1 | tee .build/etcd-daemon-tests.log
	bash Tests/check-skips.sh .build/etcd-daemon-tests.log

# The etcd backend under faults (Tests/etcd/robustness_etcd.py): two
# tetherds on a 3-member cluster, writers and resuming watchers on both,
# SIGKILL of a tetherd, of a member and of the leader, SIGSTOP of a member,
# compaction while a host is stopped; every guarantee checked at the end.
# ROBUSTNESS_ETCD_ARGS, e.g. "--seed 3 --seconds 120".
robustness-etcd: etcd
	python3 Tests/etcd/robustness_etcd.py --tetherd $(ETCD_DIR)/.build/release/tetherd-etcd $(ROBUSTNESS_ETCD_ARGS)

# The hostile-peer scenarios against the release daemon, with the owner's
# p99 held to the issue's 50 ms (make test runs them on the debug daemon,
# bounding only stalls: docs/daemon.md, "Security").
hostile: build
	python3 Tests/hostile/hostile.py --tetherd $(RELEASE_DIR)/tetherd --strict

# The randomized robustness test against the release daemon (it runs
# within `swift test` too, against the debug one: RobustnessTests).
robustness: build
	python3 Tests/robustness/robustness.py --tetherd $(RELEASE_DIR)/tetherd $(ROBUSTNESS_ARGS)

# tetherd itself under AddressSanitizer, in its own scratch path (a debug
# build: Swift's own checks on, and the sanitizer's). Swift has no UBSan of
# its own on Linux (-sanitize=undefined is refused); its C parts get it.
# Tests/sanitizers/daemon.sh says what runs; not in `make test` (minutes).
ASAN_DAEMON_SCRATCH := .build-asan-daemon
asan-daemon: build
	@echo "$(SWIFT) build -c debug --product tetherd --scratch-path $(ASAN_DAEMON_SCRATCH) --sanitize=address -Xcc -fsanitize=undefined"
	@set -o pipefail; $(SWIFT) build -c debug --product tetherd --scratch-path $(ASAN_DAEMON_SCRATCH) \
	  --sanitize=address -Xcc -fsanitize=undefined 2>&1 | { grep -v "Cannot export local symbol" || true; }
	bash Tests/sanitizers/daemon.sh $(ASAN_DAEMON_SCRATCH)/debug/tetherd

# Memcheck on the release tetherd (a copy without debug information:
# valgrind 3.19 cannot read the DWARF 5 of the Swift build) under a short
# tetherctl workload ending in SIGTERM; fails on a memory error or a
# definite leak (Tests/sanitizers/tetherd.valgrind.supp says what is not one).
valgrind-daemon: build
	@mkdir -p $(BIN)
	objcopy --strip-debug $(RELEASE_DIR)/tetherd $(BIN)/tetherd.nodebug
	bash Tests/sanitizers/workload.sh $(BIN)/tetherd.nodebug $(RELEASE_DIR)/tetherctl \
	  valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=9 \
	  --suppressions=Tests/sanitizers/tetherd.valgrind.supp

# Memcheck on the C examples against the release library.
valgrind: build
	SANITIZE=valgrind bash Tests/CTests/run.sh

clean:
	-$(SWIFT) package clean
	-cd $(ETCD_DIR) && $(SWIFT) package clean
	rm -rf $(BIN) $(TSAN_SCRATCH) $(FUZZ_SCRATCH) $(ASAN_DAEMON_SCRATCH)

#!/usr/bin/env bash
# run-tests.sh — the C test suite: builds every examples-c/*.c against
# libtether.so (a program that includes "workloads/workloads.h" also gets
# examples-c/workloads/*.c), runs each, and prints one line per program plus
# a total:
#
#     PASS counter
#     FAIL threads (exit 1)        <- followed by that program's output
#     ...
#     6 passed, 1 failed
#
# The last line is always "N passed, N failed"; the exit status is 1 when any
# program failed (a build failure counts as a failure of that program).
#
# Environment:
#   CC            C compiler (default cc; the sanitizer modes pick their own
#                 unless CC is set)
#   TETHER_LIBDIR directory holding libtether.so (default .build/release)
#   SANITIZE      ""        plain build
#                 asan      -fsanitize=address,undefined, leaks detected
#                 tsan      -fsanitize=thread (point TETHER_LIBDIR at a
#                           TSan build of the library: `make tsan` does)
#                 valgrind  plain build, each run under valgrind memcheck
#   TEST_TIMEOUT  seconds per program (default 120; valgrind 600)
#   ONLY          run just these programs, e.g. ONLY="counter threads"
#   EXTRA_RESULTS results of steps run before this script, as name=exitcode
#                 words (make test passes "swift-test=0 check-install=0"):
#                 reported as PASS/FAIL lines and counted in the total, so
#                 the last line covers the whole `make test`
set -u

cd "$(dirname "$0")/.." || exit 1
root=$(pwd)

libdir=${TETHER_LIBDIR:-.build/release}
case "$libdir" in /*) ;; *) libdir="$root/$libdir" ;; esac
mode=${SANITIZE:-}
bindir="$root/examples-c/bin${mode:+/$mode}"
timeout_s=${TEST_TIMEOUT:-120}

if [ ! -f "$libdir/libtether.so" ]; then
  echo "run-tests.sh: $libdir/libtether.so not found (build it with: make build)"
  echo "0 passed, 1 failed"
  exit 1
fi
if ! pkg-config --exists libuv; then
  echo "run-tests.sh: libuv is not installed (pkg-config libuv); run: make deps"
  echo "0 passed, 1 failed"
  exit 1
fi

cc=${CC:-cc}
cflags=(-std=c99 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -g -Iinclude -Iexamples-c)
# shellcheck disable=SC2207
cflags+=($(pkg-config --cflags libuv))
# shellcheck disable=SC2207
ldflags=(-L"$libdir" -ltether -Wl,-rpath,"$libdir" $(pkg-config --libs libuv) -lpthread -lm)
runner=()
run_env=()

case "$mode" in
  "") ;;
  asan)
    # gcc's libasan/libubsan: the C side is instrumented, the Swift library
    # is not (ASan still checks every malloc/free it does, and LeakSanitizer
    # sees its leaks).
    cflags+=(-O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
    ldflags+=(-fsanitize=address,undefined)
    run_env=(ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1"
             UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1")
    ;;
  tsan)
    # The Swift toolchain's clang: its TSan runtime is the one a
    # `swift build --sanitize=thread` library expects the executable to carry.
    # That runtime also intercepts libdispatch, so the program links the
    # toolchain's libdispatch and BlocksRuntime; the library itself needs the
    # shared Swift runtime from the same directory (lib/swift/linux), found
    # through an rpath.
    if [ -z "${CC:-}" ]; then
      if [ -x /opt/swift/usr/bin/clang ]; then cc=/opt/swift/usr/bin/clang; else cc=$(command -v clang || echo cc); fi
    fi
    swiftlib=${TETHER_SWIFT_RUNTIME:-}
    if [ -z "$swiftlib" ] && command -v swift >/dev/null 2>&1; then
      swiftlib="$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")/lib/swift/linux"
    fi
    cflags+=(-O1 -fsanitize=thread -fno-omit-frame-pointer)
    ldflags+=(-fsanitize=thread)
    case "$cc" in *clang*) ldflags+=(-fuse-ld=lld) ;; esac
    if [ -n "$swiftlib" ] && [ -d "$swiftlib" ]; then
      ldflags+=(-L"$swiftlib" -ldispatch -lBlocksRuntime -Wl,-rpath,"$swiftlib")
    fi
    run_env=(TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1")
    ;;
  valgrind)
    if ! command -v valgrind >/dev/null 2>&1; then
      echo "run-tests.sh: valgrind is not installed (apt-get install valgrind)"
      echo "0 passed, 1 failed"
      exit 1
    fi
    runner=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect
            --show-leak-kinds=definite,indirect --error-exitcode=99)
    [ -f "$root/examples-c/valgrind.supp" ] && runner+=(--suppressions="$root/examples-c/valgrind.supp")
    timeout_s=${TEST_TIMEOUT:-600}
    ;;
  *)
    echo "run-tests.sh: unknown SANITIZE=$mode (use asan, tsan or valgrind)"
    echo "0 passed, 1 failed"
    exit 1
    ;;
esac

mkdir -p "$bindir"
passed=0
failed=0
failed_names=()

for result in ${EXTRA_RESULTS:-}; do
  name=${result%%=*}
  rc=${result#*=}
  if [ "$rc" = 0 ]; then
    echo "PASS $name"
    passed=$((passed + 1))
  else
    echo "FAIL $name (exit $rc; its output is above)"
    failed=$((failed + 1))
    failed_names+=("$name")
  fi
done

echo "run-tests.sh: ${mode:-plain} build with $cc against $libdir/libtether.so"
for src in examples-c/*.c; do
  name=$(basename "$src" .c)
  if [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $name "* ]]; then continue; fi
  exe="$bindir/$name"
  log="$bindir/$name.log"
  # A program that includes "workloads/workloads.h" (the benchmark
  # workloads, reusable code) is linked with every examples-c/workloads/*.c.
  extra_srcs=()
  if grep -q '^#include "workloads/' "$src"; then extra_srcs=(examples-c/workloads/*.c); fi
  if ! "$cc" "${cflags[@]}" -o "$exe" "$src" "${extra_srcs[@]}" "${ldflags[@]}" >"$log" 2>&1; then
    echo "FAIL $name (build failed)"
    sed 's/^/    /' "$log"
    failed=$((failed + 1))
    failed_names+=("$name")
    continue
  fi
  env "${run_env[@]}" timeout -k 10 "$timeout_s" "${runner[@]}" "$exe" >"$log" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "PASS $name"
    passed=$((passed + 1))
  else
    case "$rc" in
      124) why="exit $rc: timed out after ${timeout_s}s" ;;
      99) why="exit $rc: valgrind found errors" ;;
      *) if [ "$rc" -gt 128 ]; then why="exit $rc: killed by signal $((rc - 128))"; else why="exit $rc"; fi ;;
    esac
    echo "FAIL $name ($why)"
    sed 's/^/    /' "$log"
    failed=$((failed + 1))
    failed_names+=("$name")
  fi
done

if [ "$failed" -gt 0 ]; then echo "failed: ${failed_names[*]}"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

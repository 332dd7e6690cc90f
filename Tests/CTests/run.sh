#!/usr/bin/env bash
# run.sh — the C harness: builds the lessons (every examples-c/*.c, each its
# own program) and the test runner (Tests/CTests/*.c with the benchmark
# workloads, benchmarks/workloads/*.c) against libtether.so, then runs every
# lesson and every registered case (cases.h), each case in its own process,
# and prints one line per lesson or case plus a total:
#
#     PASS lesson counter
#     PASS computed_diamond
#     FAIL threads_derived_writers_and_reader (exit 1)   <- then its output
#     ...
#     130 passed, 1 failed
#
# The last line is always "N passed, N failed, N skipped"; the exit status is
# 1 when any lesson or case failed (a build failure counts as a failure).
#
# A program that exits 77 (check_skip in check.h) was skipped: it prints
# SKIP, with the reason from its "NAME: skipped (REASON)" line, and counts
# apart. Under CI=true a skip fails unless its name is on
# Tests/allowed-skips.txt (with its reason): a skipped test proves nothing,
# and must not pass silently.
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
#   ONLY          run just these lessons and cases, e.g. ONLY="counter
#                 computed_diamond"
#   CASE          run just this one case (make test CASE=computed_diamond)
#   LESSONS_ONLY  set: lessons only, the cases' runner is not built (make
#                 lesson NAME=x)
#   TETHERD       the tetherd binary that lessons and cases talking to the
#                 daemon run beside (default .build/release/tetherd): each
#                 such program (a lesson with the line "harness: tetherd",
#                 a case named remote_*) gets a daemon of its own, started
#                 and supervised by support/with_tetherd.c
#   CI            "true": a skip not on Tests/allowed-skips.txt is a failure
#   EXTRA_RESULTS results of steps run before this script, as name=exitcode
#                 words (make test passes "swift-test=0 check-install=0"):
#                 reported as PASS/FAIL lines and counted in the total, so
#                 the last line covers the whole `make test`
set -u

cd "$(dirname "$0")/../.." || exit 1
root=$(pwd)

libdir=${TETHER_LIBDIR:-.build/release}
case "$libdir" in /*) ;; *) libdir="$root/$libdir" ;; esac
mode=${SANITIZE:-}
bindir="$root/.build-ctests/bin${mode:+/$mode}"
timeout_s=${TEST_TIMEOUT:-120}

if [ ! -f "$libdir/libtether.so" ]; then
  echo "run.sh: $libdir/libtether.so not found (build it with: make build)"
  echo "0 passed, 1 failed"
  exit 1
fi
if ! pkg-config --exists libuv; then
  echo "run.sh: libuv is not installed (pkg-config libuv); run: make deps"
  echo "0 passed, 1 failed"
  exit 1
fi

cc=${CC:-cc}
cflags=(-std=c99 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -g -Iinclude -ITests/CTests -Ibenchmarks)
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
      echo "run.sh: valgrind is not installed (apt-get install valgrind)"
      echo "0 passed, 1 failed"
      exit 1
    fi
    runner=(valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect
            --show-leak-kinds=definite,indirect --error-exitcode=99)
    [ -f "$root/Tests/CTests/valgrind.supp" ] && runner+=(--suppressions="$root/Tests/CTests/valgrind.supp")
    timeout_s=${TEST_TIMEOUT:-600}
    ;;
  *)
    echo "run.sh: unknown SANITIZE=$mode (use asan, tsan or valgrind)"
    echo "0 passed, 1 failed"
    exit 1
    ;;
esac

mkdir -p "$bindir"
passed=0
failed=0
skipped=0
failed_names=()

# Whether NAME may skip under CI=true (Tests/allowed-skips.txt).
skip_allowed() {
  [ -f "$root/Tests/allowed-skips.txt" ] && grep -qE "^$1([[:space:]]|\$)" "$root/Tests/allowed-skips.txt"
}

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

# Runs one built program (a lesson, or the runner with a case name) and
# reports it. With --tetherd first, beside a daemon of its own.
run_one() {
  local label=$1 log=$2
  shift 2
  local beside=()
  if [ "${1:-}" = "--tetherd" ]; then
    shift
    beside=("$with_tetherd" "$tetherd" --)
  fi
  env "${run_env[@]}" timeout -k 10 "$timeout_s" "${beside[@]}" "${runner[@]}" "$@" >"$log" 2>&1
  local rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "PASS $label"
    # Picked by name (CASE, ONLY): its own output is what was asked for.
    if [ -n "${CASE:-}${ONLY:-}" ]; then sed 's/^/    /' "$log"; fi
    passed=$((passed + 1))
    return
  fi
  if [ "$rc" -eq 77 ]; then
    local name=${label#lesson } reason
    reason=$(sed -n 's/^.*: skipped (\(.*\))$/\1/p' "$log" | head -n 1)
    if [ "${CI:-}" = true ] && ! skip_allowed "$name"; then
      echo "FAIL $label (skipped under CI=true, and not on Tests/allowed-skips.txt: ${reason:-no reason given})"
      failed=$((failed + 1))
      failed_names+=("$label")
    else
      echo "SKIP $label (${reason:-no reason given})"
      skipped=$((skipped + 1))
    fi
    return
  fi
  local why
  case "$rc" in
    124) why="exit $rc: timed out after ${timeout_s}s" ;;
    99) why="exit $rc: valgrind found errors" ;;
    *) if [ "$rc" -gt 128 ]; then why="exit $rc: killed by signal $((rc - 128))"; else why="exit $rc"; fi ;;
  esac
  echo "FAIL $label ($why)"
  sed 's/^/    /' "$log"
  failed=$((failed + 1))
  failed_names+=("$label")
}

wanted() {
  if [ -n "${CASE:-}" ]; then [ "$1" = "$CASE" ]; return; fi
  [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]
}

echo "run.sh: ${mode:-plain} build with $cc against $libdir/libtether.so"

# The daemon beside the programs that talk to it.
tetherd=${TETHERD:-$root/.build/release/tetherd}
with_tetherd="$bindir/with_tetherd"
if ! cc -std=c99 -Wall -Wextra -Werror -o "$with_tetherd" Tests/CTests/support/with_tetherd.c >"$bindir/with_tetherd.log" 2>&1; then
  echo "FAIL with_tetherd (build failed)"
  sed 's/^/    /' "$bindir/with_tetherd.log"
  failed=$((failed + 1))
  failed_names+=("with_tetherd")
fi
needs_daemon() {  # a lesson file, or a case name
  case "$1" in
    remote_*) return 0 ;;
    *.c) grep -q "harness: tetherd" "$1" ;;
    *) return 1 ;;
  esac
}

# The lessons: each a program that must exit 0.
found=0
for src in examples-c/*.c; do
  name=$(basename "$src" .c)
  wanted "$name" || continue
  found=1
  exe="$bindir/$name"
  log="$bindir/$name.log"
  if ! "$cc" "${cflags[@]}" -o "$exe" "$src" "${ldflags[@]}" >"$log" 2>&1; then
    echo "FAIL lesson $name (build failed)"
    sed 's/^/    /' "$log"
    failed=$((failed + 1))
    failed_names+=("$name")
    continue
  fi
  if needs_daemon "$src"; then
    run_one "lesson $name" "$log" --tetherd "$exe"
  else
    run_one "lesson $name" "$log" "$exe"
  fi
done

# The picture of the lesson graph_form, read back by Graphviz (dot -Tjson)
# and checked node by node (Tests/graph/check_picture.py). A Python script:
# never under the sanitizer's runner, but the lesson it runs is this mode's.
if wanted graph_form_picture; then
  found=1
  exe="$bindir/graph_form"
  log="$bindir/graph_form_picture.log"
  if [ ! -x "$exe" ] && ! "$cc" "${cflags[@]}" -o "$exe" examples-c/graph_form.c "${ldflags[@]}" >"$log" 2>&1; then
    echo "FAIL graph_form_picture (the lesson graph_form did not build)"
    sed 's/^/    /' "$log"
    failed=$((failed + 1))
    failed_names+=("graph_form_picture")
  else
    kept_runner=("${runner[@]}")
    runner=()
    run_one "graph_form_picture" "$log" python3 "$root/Tests/graph/check_picture.py" "$exe"
    runner=("${kept_runner[@]}")
  fi
fi

# tetherd's metrics scraped by a real Prometheus (Tests/metrics/
# prometheus_test.py, docs/daemon.md "Metrics"). The daemon is the release
# build whatever the mode: the plain run only.
if [ -z "$mode" ] && wanted metrics_prometheus; then
  found=1
  run_one "metrics_prometheus" "$bindir/metrics_prometheus.log" \
    python3 "$root/Tests/metrics/prometheus_test.py" "$tetherd" "$(dirname "$tetherd")/tetherctl"
fi

# The cases: one runner, one process per case (not for `make lesson`,
# LESSONS_ONLY: the runner's build would only delay the lesson).
tests_exe="$bindir/tether-tests"
tests_log="$bindir/tether-tests.build.log"
if [ -n "${LESSONS_ONLY:-}" ]; then
  if [ -n "${CASE:-}" ] && [ "$found" -eq 0 ]; then
    echo "FAIL $CASE (no such lesson in examples-c/)"
    failed=$((failed + 1))
    failed_names+=("$CASE")
  fi
elif ! "$cc" "${cflags[@]}" -o "$tests_exe" Tests/CTests/*.c benchmarks/workloads/*.c "${ldflags[@]}" >"$tests_log" 2>&1; then
  echo "FAIL tether-tests (build failed)"
  sed 's/^/    /' "$tests_log"
  failed=$((failed + 1))
  failed_names+=("tether-tests")
else
  while read -r name; do
    wanted "$name" || continue
    found=1
    if needs_daemon "$name"; then
      run_one "$name" "$bindir/$name.log" --tetherd "$tests_exe" "$name"
    else
      run_one "$name" "$bindir/$name.log" "$tests_exe" "$name"
    fi
  done < <("$tests_exe" --list)
  if [ -n "${CASE:-}" ] && [ "$found" -eq 0 ]; then
    echo "FAIL $CASE (no such case or lesson; $tests_exe --list shows the cases)"
    failed=$((failed + 1))
    failed_names+=("$CASE")
  fi
fi

if [ "$failed" -gt 0 ]; then echo "failed: ${failed_names[*]}"; fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# daemon.sh — tetherd itself under AddressSanitizer (+ UndefinedBehavior-
# Sanitizer on its C parts): `make asan-daemon`.
#
#   bash Tests/sanitizers/daemon.sh [TETHERD]   (default .build-asan-daemon/debug/tetherd)
#
# Runs, against that daemon: every C lesson and case that talks to a daemon
# (lessons marked "harness: tetherd", cases named remote_*; the library is
# the release one), the robustness test for ROBUSTNESS_SECONDS (default 30;
# it kills the daemon with SIGKILL again and again) and a short tetherctl
# workload ending in SIGTERM. Every sanitizer report of every daemon process
# goes to a file of its own (ASAN_OPTIONS log_path); the run fails when any
# test fails or any report is left (leaks included, after the suppressions
# in tetherd.lsan.supp). The last line says what ran and what was found.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
tetherd=$(realpath "${1:-.build-asan-daemon/debug/tetherd}")
ctl=$root/.build/release/tetherctl
[ -x "$tetherd" ] || { echo "daemon.sh: $tetherd not found (make asan-daemon builds it)"; exit 2; }
[ -x "$ctl" ] || { echo "daemon.sh: $ctl not found (make build)"; exit 2; }
reports=$(mktemp -d "${TMPDIR:-/tmp}/tetherd-asan.XXXXXX")
# Only the daemon is instrumented; these reach it through the environment of
# whoever starts it (with_tetherd, robustness.py, this script).
export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:abort_on_error=0:halt_on_error=1"
export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$root/Tests/sanitizers/tetherd.lsan.supp:print_suppressions=0"
failed=()

# 1. The C lessons and cases that run beside a daemon.
lessons=$(grep -l "harness: tetherd" examples-c/*.c | xargs -n1 basename | sed 's/\.c$//')
cases=$(grep -o 'X(remote_[a-z_]*)' Tests/CTests/cases.h | sed 's/X(\(.*\))/\1/')
only=$(echo $lessons $cases)
echo "== C harness beside the ASan tetherd: $only"
clog=$reports/ctests.log
TETHERD="$tetherd" ONLY="$only" bash Tests/CTests/run.sh 2>&1 | tee "$clog" | tail -3
ctests=$(tail -1 "$clog")
case "$ctests" in *" 0 failed"*) ;; *) failed+=("C harness: $ctests") ;; esac

# 2. The robustness test (SIGKILLs included: each killed process reports
# nothing, each restarted one is checked as long as it lives).
echo "== robustness test, ${ROBUSTNESS_SECONDS:-30} s"
if ! python3 Tests/robustness/robustness.py --tetherd "$tetherd" --duration "${ROBUSTNESS_SECONDS:-30}" \
    > "$reports/robustness.log" 2>&1; then
  failed+=("robustness test (log: $reports/robustness.log)")
fi
tail -3 "$reports/robustness.log"

# 3. tetherctl against it: sets, a transaction, a watch, a snapshot, a
# compact, then SIGTERM (the clean shutdown, where leaks are counted).
echo "== tetherctl workload, then SIGTERM"
if ! bash Tests/sanitizers/workload.sh "$tetherd" "$ctl" > "$reports/workload.log" 2>&1; then
  failed+=("tetherctl workload (log: $reports/workload.log)")
fi
tail -2 "$reports/workload.log"

found=$(ls "$reports" | grep -E '^(asan|ubsan)\.' || true)
if [ -n "$found" ]; then
  for f in $found; do echo "--- $reports/$f"; head -40 "$reports/$f"; done
  failed+=("sanitizer reports: $(echo $found | wc -w) (in $reports)")
fi
if [ ${#failed[@]} -eq 0 ]; then
  echo "asan-daemon: clean (C harness: $ctests; robustness: passed; workload: passed; 0 sanitizer reports)"
  rm -rf "$reports"
  exit 0
fi
printf 'asan-daemon: FAILED: %s\n' "${failed[@]}"
exit 1

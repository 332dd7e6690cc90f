#!/usr/bin/env bash
# run.sh SECONDS — runs the libFuzzer build of tetherd-fuzz (make fuzz
# builds it into .build-fuzz/) on its four targets, one process each
# (DaemonFuzzer.Target, docs/robustness.md "The fuzzer"):
#
#   fast      the frame decoder, the dispatcher and sessions on an
#             in-memory store (one daemon, no watch): SECONDS long;
#   watch     the same daemon watched by four sessions from the start,
#             their replies applied and read back at the end: SECONDS/2
#             long (at least 10 s);
#   fastpath  the fast paths against the slow path (two daemons, the same
#             messages): SECONDS/2 long (at least 10 s);
#   store     the same dispatcher on the SQLite store, synced after each
#             message and reopened as a restarted daemon would: SECONDS/2
#             long (at least 10 s): each input costs ~30 times more.
#
# FUZZ_TARGETS="fast store" runs only those (all four by default).
#
# Each starts from the seed corpus Tests/fuzz/corpus and the regressions
# Tests/fuzz/regressions (store also from Tests/fuzz/corpus-store, its
# SQLite file and rows: to fast, a file of 1,800 NULs is 1,800 empty
# messages, and its mutations were 3% of fast's corpus and 60% of its
# time); what it finds that covers new code goes to
# .build-fuzz/corpus-TARGET (kept between runs; with FUZZ_FRESH=1, as in
# make test, to a new directory removed afterwards, so that replaying a
# grown corpus does not eat the run), a crashing input to
# .build-fuzz/crashes/. Prints libFuzzer's figures and one line a target:
#
#     fuzz fast: 6300 executions in 60 s (105/s; 270 per CPU-second, 23.4 CPU-s), corpus 893 inputs (858 KiB), no crash
#
# (per CPU-second: libFuzzer's rate is per second of the clock, which on
# this shared 2-core machine depends on the other builds)
#
# and exits 1 on a crash (a violation of DaemonFuzzer's invariants, an
# AddressSanitizer report, a leak, a timeout), after printing the report
# and the input's path. Replay one input with the plain build (every
# target's checks, or TETHER_FUZZ_TARGET=fast|watch|fastpath|store for one):
#     swift build --product tetherd-fuzz && .build/debug/tetherd-fuzz FILE
set -u
cd "$(dirname "$0")/../.." || exit 1

total=${1:-60}
bin=.build-fuzz/release/tetherd-fuzz
crashes=.build-fuzz/crashes
if [ ! -x "$bin" ]; then
  echo "fuzz: $bin is missing (make fuzz builds it)"
  exit 1
fi
fresh=()
cleanup() { rm -rf "${fresh[@]}"; }
trap cleanup EXIT

# run_target NAME SECONDS SEEDS...: one libFuzzer run; returns 1 on a crash.
run_target() {
local target=$1 seconds=$2
shift 2
local work=.build-fuzz/corpus-$target
if [ "${FUZZ_FRESH:-0}" = 1 ]; then
  mkdir -p .build-fuzz
  work=$(mktemp -d .build-fuzz/corpus-fresh-$target.XXXXXX)
  fresh+=("$work")
fi
local log=.build-fuzz/fuzz-$target.log
mkdir -p "$work" "$crashes"
# Slow units (libFuzzer keeps any input over 10 s as slow-unit-*) are
# not failures: the -timeout below is one.
failures() { find "$crashes" -type f ! -name 'slow-unit-*' | wc -l; }
before=$(failures)

# The Swift runtime's backtracer would hold the terminal after a crash
# (libFuzzer and ASan print their own); the suppressions are explained in
# the file. The CPU time it used (bash's `time`: user + system, the
# fuzzer's included, since timeout waits for it) gives a rate that does
# not depend on what else this shared machine runs.
#
# The fast target holds freed memory in ASan's quarantine for the next
# 256 KiB of frees (16 KiB cached per thread), not the default 256 MiB
# (1 MiB): a use after free within an input's last few hundred frees is
# still reported, one thousands of inputs later is not. With the default,
# each allocation reused memory that had left the CPU's caches, the
# largest single cost of an input (11-13% of its time in the allocator,
# perf); the small quarantine gives the fast target ~20% more executions
# a second (docs/robustness.md). `quarantine_size` (bytes) is ASan's
# older spelling of `quarantine_size_mb`, which cannot say 256 KiB. The
# other targets run the same daemon code with the default quarantine.
local quarantine=""
[ "$target" = fast ] && quarantine=":quarantine_size=262144:thread_local_quarantine_size_kb=16"
local TIMEFORMAT='%U %S'
{ time TETHER_FUZZ_TARGET=$target SWIFT_BACKTRACE=enable=no \
ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:malloc_context_size=4$quarantine" \
LSAN_OPTIONS="suppressions=$PWD/Tests/fuzz/lsan.supp:print_suppressions=0" \
  timeout -k 10 $((seconds + 120)) "$bin" -max_total_time="$seconds" -max_len=4096 -timeout=20 -rss_limit_mb=3072 \
    -dict=Tests/fuzz/tetherd.dict -artifact_prefix="$crashes/" -print_final_stats=1 \
    "$work" "$@" >"$log" 2>&1 ; } 2>"$log.cpu"
local rc=$?

local runs rate files kib after cpu per_cpu
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
cpu=$(awk 'END {printf "%.1f", $1 + $2}' "$log.cpu")
per_cpu=$(awk -v n="${runs:-0}" -v c="$cpu" 'BEGIN {printf "%d", (c > 0 ? n / c : 0)}')
files=$(find "$work" -type f | wc -l)
kib=$(( ($(find "$work" -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}') + 1023) / 1024 ))
after=$(failures)
grep -E '^(INFO: (Seed|Loaded|.*files found)|#[0-9]+\s+(INITED|DONE))|^stat::' "$log"
if [ "$rc" -ne 0 ] || [ "$after" -gt "$before" ]; then
  # The report: the violations (or the sanitizer's), without the stacks'
  # noise after them.
  grep -v -E '^(#[0-9]+\s+(NEW|REDUCE|pulse|RELOAD)|\s+NEW_FUNC)' "$log" | head -80
  echo "fuzz $target: CRASH after ${runs:-?} executions (exit $rc); the input: $(ls -t "$crashes" | grep -v '^slow-unit-' | head -1 | sed "s|^|$crashes/|")"
  echo "fuzz: replay it: swift build --product tetherd-fuzz && .build/debug/tetherd-fuzz FILE; keep it in Tests/fuzz/regressions"
  return 1
fi
echo "fuzz $target: ${runs:-0} executions in $seconds s (${rate:-0}/s; $per_cpu per CPU-second, $cpu CPU-s), corpus $files inputs ($kib KiB), no crash"
}

half=$(( total / 2 < 10 ? 10 : total / 2 ))
status=0
for target in ${FUZZ_TARGETS:-fast watch fastpath store}; do
  case $target in
    fast) run_target fast "$total" Tests/fuzz/corpus Tests/fuzz/regressions || status=1 ;;
    watch) run_target watch "$half" Tests/fuzz/corpus Tests/fuzz/regressions || status=1 ;;
    fastpath) run_target fastpath "$half" Tests/fuzz/corpus Tests/fuzz/regressions || status=1 ;;
    store) run_target store "$half" Tests/fuzz/corpus Tests/fuzz/corpus-store Tests/fuzz/regressions || status=1 ;;
    *) echo "fuzz: no target $target (fast, watch, fastpath, store)"; status=1 ;;
  esac
done
exit $status

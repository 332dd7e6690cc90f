#!/usr/bin/env bash
# run.sh — builds every benchmark driver optimized, runs Tether and the
# anchors one after the other in this one run, and writes the report.
# `make bench` calls it after installing the anchors' dependencies
# (scripts/install-bench-deps.sh) and building the release library.
#
#   benchmarks/tether/            C, -O2, against .build/release/libtether.so,
#                                 reusing benchmarks/workloads/*.c unchanged
#   benchmarks/gobject/           C, -O2, GLib/GObject
#   benchmarks/qt/                C++, -O2, Qt 6 Core (one g++ invocation)
#   benchmarks/swift-observation/ SwiftPM package, release build, scratch
#                                 path .build-bench-observation
#   benchmarks/daemon/            C, -O2: tetherd (.build/release/tetherd)
#                                 beside redis-server, over Unix sockets
#                                 (system "daemon"; needs libtether.so too)
#   benchmarks/icount/            icount.c (C, -O2, the per-operation probes),
#                                 and icount.py, which runs the probes and the
#                                 drivers' --icount mode under callgrind
#                                 (valgrind) after the timed rounds
#
# Rounds: every driver runs BENCH_ROUNDS times (default 2; 1 with
# BENCH_QUICK), in alternating order (round 1: Tether first, round 2: Tether
# last), and each figure is the better of its rounds. This VM's speed drifts
# by tens of percent over minutes (the same binaries gave kairo mux 183 and
# 298 ms in two runs an hour apart, the anchors moving alike), so one
# window per system could hand one system a slow spell; alternating rounds
# give every system two windows, at opposite ends of the run.
#
# Results: one JSON line per figure in .build-bench/results/<system>.r<N>.jsonl,
# each driver's progress and check messages in <system>.r<N>.log; then
# benchmarks/report.py merges the rounds and writes docs/benchmarks.md and
# docs/benchmarks.png.
#
# Environment: CC (cc), CXX (g++), SWIFT (swift); BENCH_QUICK=1 runs small
# sizes to check that everything builds and its checks pass (the report then
# goes to .build-bench/benchmarks-quick.md, never to docs/); BENCH_ONLY
# ("kairo cellx sbench dynamic setnotify chain fanout crossthread memory paths";
# "icount": the instruction counts; for the daemon: "raw rtt pipeline clients
# watch e2e durable") and BENCH_SYSTEMS
# ("tether gobject qt swift daemon") narrow the run; BENCH_ROUNDS sets the
# number of rounds. BENCH_SYSTEMS=daemon alone rewrites only the section
# "tetherd beside Redis" of docs/benchmarks.md (report.py --section daemon),
# leaving the rest of the file as the last full run wrote it; likewise
# BENCH_ONLY=icount alone runs no timed workload and rewrites only the section
# "Instruction counts (callgrind)" (report.py --section icount).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
root=$(pwd)
out="$root/.build-bench"
bin="$out/bin"
res="$out/results"
mkdir -p "$bin" "$res"
rm -f "$res"/*.jsonl "$res"/*.log "$res"/*.status

cc=${CC:-cc}
cxx=${CXX:-g++}
swift=${SWIFT:-swift}
systems=${BENCH_SYSTEMS:-tether gobject qt swift daemon}
if [ "${BENCH_QUICK:-}" = 1 ]; then rounds=${BENCH_ROUNDS:-1}; else rounds=${BENCH_ROUNDS:-2}; fi
case "$rounds" in ''|*[!0-9]*|0) echo "bench: BENCH_ROUNDS must be a positive number, not '$rounds'"; exit 1 ;; esac
lib="$root/.build/release/libtether.so"
tetherd="$root/.build/release/tetherd"

say() { echo "bench: $*"; }
want_sys() { [[ " $systems " == *" $1 "* ]]; }
only=$(echo ${BENCH_ONLY:-})  # one line, single spaces
# The instruction counts run unless BENCH_ONLY names sections without them;
# BENCH_ONLY=icount alone runs nothing else.
want_icount() { [ -z "$only" ] || [[ " ${only//,/ } " == *" icount "* ]]; }
icount_only() { [ "$only" = icount ]; }
status() { echo "$2" >"$res/$1.status"; }

t_start=$(date +%s)

# ---- build ------------------------------------------------------------------

if want_sys tether; then
  if [ ! -f "$lib" ]; then
    say "$lib not found (make build)"
    status tether "not built: libtether.so missing"
  elif "$cc" -std=gnu11 -O2 -Wall -Wextra -Iinclude -Ibenchmarks \
      -o "$bin/bench_tether" benchmarks/tether/bench_tether.c benchmarks/workloads/*.c \
      -L"$root/.build/release" -ltether -Wl,-rpath,"$root/.build/release" -lpthread -lm \
      >"$res/tether.build.log" 2>&1; then
    status tether built
  else
    cat "$res/tether.build.log"
    status tether "not built: the C driver failed to compile"
  fi
  # The per-operation probes of issue 16 (benchmarks/icount/icount.c).
  if [ -f "$lib" ] && want_icount; then
    "$cc" -std=gnu11 -O2 -Wall -Wextra -Iinclude -o "$bin/icount" benchmarks/icount/icount.c \
      -L"$root/.build/release" -ltether -Wl,-rpath,"$root/.build/release" \
      >>"$res/tether.build.log" 2>&1 || { cat "$res/tether.build.log"; rm -f "$bin/icount"; }
  fi
fi

if want_sys gobject; then
  if pkg-config --exists gobject-2.0 2>/dev/null &&
     "$cc" -std=gnu11 -O2 -Wall -Wextra -o "$bin/bench_gobject" benchmarks/gobject/bench_gobject.c \
       $(pkg-config --cflags --libs gobject-2.0) -lpthread >"$res/gobject.build.log" 2>&1; then
    status gobject built
  else
    [ -s "$res/gobject.build.log" ] && cat "$res/gobject.build.log"
    status gobject "not built: GLib/GObject development files (libglib2.0-dev) missing or the driver failed to compile"
  fi
fi

if want_sys qt; then
  # One compiler invocation; the two plain-C files give the same graph
  # shapes and expectations as the Tether port (they make no Tether calls).
  if pkg-config --exists Qt6Core 2>/dev/null &&
     "$cxx" -O2 -fPIC -Wall -Wextra -Iinclude -Ibenchmarks $(pkg-config --cflags Qt6Core) \
       -o "$bin/bench_qt" benchmarks/qt/bench_qt.cpp \
       -x c benchmarks/workloads/reference.c -x c benchmarks/workloads/prng.c -x none \
       $(pkg-config --libs Qt6Core) -lpthread -lm >"$res/qt.build.log" 2>&1; then
    status qt built
  else
    [ -s "$res/qt.build.log" ] && cat "$res/qt.build.log"
    status qt "not built: Qt 6 Core development files (qt6-base-dev) missing or the driver failed to compile"
  fi
fi

if want_sys swift; then
  # CC is unset for SwiftPM: it would compile the package's C file with it
  # (make's default CC is gcc, which does not take clang's flags).
  if command -v "$swift" >/dev/null 2>&1 &&
     env -u CC -u CXX "$swift" build -c release --package-path benchmarks/swift-observation \
       --scratch-path "$root/.build-bench-observation" >"$res/swift.build.log" 2>&1; then
    cp "$root/.build-bench-observation/release/ObservationBench" "$bin/bench_swift_observation"
    status swift built
  else
    [ -s "$res/swift.build.log" ] && tail -20 "$res/swift.build.log"
    status swift "not built: the Swift toolchain is missing or the package failed to build"
  fi
fi

if want_sys daemon; then
  # tetherd beside Redis: the driver starts both servers itself (Redis's
  # figures are skipped, with a note, when redis-server is missing).
  if [ ! -f "$lib" ] || [ ! -x "$tetherd" ]; then
    say "$lib or $tetherd not found (make build)"
    status daemon "not built: libtether.so or tetherd missing"
  elif "$cc" -std=gnu11 -O2 -Wall -Wextra -Iinclude -Ibenchmarks \
      -o "$bin/bench_tetherd" benchmarks/daemon/bench_tetherd.c \
      -L"$root/.build/release" -ltether -Wl,-rpath,"$root/.build/release" -lpthread -lm \
      >"$res/daemon.build.log" 2>&1; then
    status daemon built
    # SQLite alone, for the durable section (bench_tetherd runs it from its
    # own directory; without libsqlite3-dev its rows are skipped).
    "$cc" -std=gnu11 -O2 -Wall -Wextra -Ibenchmarks -o "$bin/bench_sqlite" benchmarks/daemon/bench_sqlite.c \
      -lsqlite3 -lpthread >>"$res/daemon.build.log" 2>&1 || rm -f "$bin/bench_sqlite"
  else
    cat "$res/daemon.build.log"
    status daemon "not built: the C driver failed to compile"
  fi
fi

# ---- run ----------------------------------------------------------------------

export TETHERD="$tetherd"  # the daemon bench_tetherd starts

run_driver() { # system executable round
  local sys=$1 exe=$2 round=$3 rc t0 t1
  [ "$(cat "$res/$sys.status" 2>/dev/null)" = built ] || return 0
  say "running $sys (round $round of $rounds)"
  t0=$(date +%s)
  "$exe" 2>&1 >"$res/$sys.r$round.jsonl" | tee "$res/$sys.r$round.log" >&2
  rc=${PIPESTATUS[0]}
  t1=$(date +%s)
  if [ "$rc" -eq 0 ]; then
    echo "$((t1 - t0)) s" >"$res/$sys.r$round.status"
  else
    echo "$((t1 - t0)) s, exit status $rc (figures before that are kept)" >"$res/$sys.r$round.status"
  fi
}

driver_of() {
  case $1 in
    tether) echo "$bin/bench_tether" ;;
    gobject) echo "$bin/bench_gobject" ;;
    qt) echo "$bin/bench_qt" ;;
    swift) echo "$bin/bench_swift_observation" ;;
    daemon) echo "$bin/bench_tetherd" ;;
  esac
}

for ((round = 1; round <= rounds; round++)); do
  icount_only && break
  order="tether gobject qt swift daemon"
  ((round % 2 == 0)) && order="daemon swift qt gobject tether"
  for sys in $order; do
    want_sys "$sys" && run_driver "$sys" "$(driver_of "$sys")" "$round"
  done
done

# Instruction counts (callgrind), once: they do not drift, so one round is
# the figure. icount.py skips, saying why, when valgrind is missing.
if want_icount; then
  counted=""
  for sys in tether gobject qt swift; do
    want_sys "$sys" && [ "$(cat "$res/$sys.status" 2>/dev/null)" = built ] && counted+=" $sys"
  done
  if [ -n "$counted" ]; then
    say "counting instructions under callgrind:$counted"
    t0=$(date +%s)
    python3 benchmarks/icount/icount.py --bin "$bin" --out "$res/icount.jsonl" \
      --systems "$counted" ${BENCH_QUICK:+--quick} 2>&1 | tee "$res/icount.log" >&2
    echo "ran in $(($(date +%s) - t0)) s" >"$res/icount.status"
  fi
fi

# Each built system's status: its run time per round.
for sys in tether gobject qt swift daemon; do
  [ "$(cat "$res/$sys.status" 2>/dev/null)" = built ] || continue
  icount_only && { status "$sys" "built (BENCH_ONLY=icount: no timed run)"; continue; }
  times=""
  for ((round = 1; round <= rounds; round++)); do
    times+="${times:+ and }$(cat "$res/$sys.r$round.status" 2>/dev/null || echo "not run")"
  done
  if ((rounds == 1)); then status "$sys" "ran in $times"; else status "$sys" "ran in $times ($rounds rounds)"; fi
done

# ---- report -----------------------------------------------------------------

versions="$res/versions.txt"
{
  echo "tether=$(sed -n 's/^#define TETHER_VERSION_STRING "\(.*\)"$/\1/p' include/tether.h)"
  echo "glib=$(pkg-config --modversion glib-2.0 2>/dev/null || echo -)"
  echo "qt=$(pkg-config --modversion Qt6Core 2>/dev/null || echo -)"
  echo "swift=$("$swift" --version 2>/dev/null | head -n 1 || echo -)"
  echo "cc=$("$cc" --version 2>/dev/null | head -n 1 || echo -)"
  echo "cxx=$("$cxx" --version 2>/dev/null | head -n 1 || echo -)"
  echo "redis=$(redis-server --version 2>/dev/null | head -n 1 || echo -)"
  echo "commit=$(git rev-parse --short=12 HEAD 2>/dev/null)$(git status --porcelain --untracked-files=no 2>/dev/null | grep -q . && echo ' (with uncommitted changes)')"
  echo "seconds=$(($(date +%s) - t_start))"
} >"$versions"

if [ "${BENCH_QUICK:-}" = 1 ]; then
  md="$out/benchmarks-quick.md"
  png="$out/benchmarks-quick.png"
  say "BENCH_QUICK=1: small sizes; the report goes to $md (docs/ is left alone)"
else
  md="$root/docs/benchmarks.md"
  png="$root/docs/benchmarks.png"
fi
if icount_only; then
  # Only the instruction counts ran: rewrite their section, keep the rest.
  if [ "${BENCH_QUICK:-}" = 1 ]; then cp "$root/docs/benchmarks.md" "$md" 2>/dev/null || true; fi
  python3 benchmarks/report.py --results "$res" --markdown "$md" --section icount \
    --command "BENCH_ONLY=icount${BENCH_SYSTEMS:+ BENCH_SYSTEMS=\"$BENCH_SYSTEMS\"} bash benchmarks/run.sh" || exit 1
elif [ "$(echo $systems)" = daemon ]; then
  # Only the daemon ran: rewrite its section, keep the rest of the report.
  # (BENCH_QUICK: into a copy of docs/benchmarks.md under .build-bench/.)
  if [ "${BENCH_QUICK:-}" = 1 ]; then cp "$root/docs/benchmarks.md" "$md" 2>/dev/null || true; fi
  python3 benchmarks/report.py --results "$res" --markdown "$md" --section daemon \
    --command "BENCH_SYSTEMS=daemon${BENCH_ROUNDS:+ BENCH_ROUNDS=$BENCH_ROUNDS}${BENCH_ONLY:+ BENCH_ONLY=\"$BENCH_ONLY\"} bash benchmarks/run.sh" || exit 1
else
  python3 benchmarks/report.py --results "$res" --markdown "$md" --chart "$png" \
    --command "make bench" || exit 1
fi
say "done in $(($(date +%s) - t_start)) s: $md"

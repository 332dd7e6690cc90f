#!/usr/bin/env python3
"""suites.py - instructions per kairo iter(), per S.js COUNT unit and per
write of each dynamic graph, for each case of the three suites, counted by
callgrind: Tether's runtime work per case, which does not drift with the
machine as its times do.

    python3 benchmarks/icount/suites.py --bin .build-bench/bin [--base DIR]

Each figure is (I(2N) - I(N)) / N (icount.py's method): `bench_tether
--icount kairo:NAME N` builds the case's graph and runs N iter()s;
`bench_tether --icount sbench:NAME N` runs the case once with COUNT = N
(its setup, creations or updates, and disposal all scale with COUNT);
`bench_tether --icount dynamic:I N` builds the I-th dynamic graph and makes
N writes, each followed by its lazy reads (a base build older than that
mode shows "-" there). With
--base, a second directory holding a bench_tether built against another
libtether.so (run.sh's command with -L elsewhere), each case gets a second
column and the change. Issue 16's rounds measured themselves this way
(docs/performance.md). Standard library only; prints a Markdown table.
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from icount import measure, no_aslr  # noqa: E402  (same directory)

KAIRO = ["avoidablePropagation", "broadPropagation", "deepPropagation", "diamond", "mux",
         "repeatedObservers", "triangle", "unstable", "molBench"]
SBENCH = ["createSignals", "create0to1", "create1to1", "create2to1", "create4to1",
          "create1000to1", "create1to2", "create1to4", "create1to8", "create1to1000",
          "update1to1", "update2to1", "update4to1", "update1000to1", "update1to2",
          "update1to4", "update1to1000"]
# The dynamic suite's graphs, by index (workloads/reference.c's order).
DYNAMIC = ["2-10x5 lazy80%", "6-10x10 dyn25% lazy80%", "4-1000x12 dyn5%", "25-1000x5",
           "3-5x500", "6-100x15 dyn50%"]
# (suite, N): N iter()s, COUNT or writes; twice N is run too.
SIZES = {"kairo": 10, "sbench": 2000, "dynamic": 50}


def count(prefix, valgrind, exe, workload, n, variant, may_lack=False):
    argv_of = lambda reps: [exe, "--icount", workload, str(reps)] + ([variant] if variant else [])
    value, err, _ = measure(prefix, valgrind, argv_of, n, 1, "__vfprintf_internal")
    if err is not None:
        if may_lack:
            return None
        sys.exit("suites.py: %s %s: %s" % (exe, workload, err))
    return value


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="directory of bench_tether")
    ap.add_argument("--base", help="directory of a bench_tether to compare with")
    ap.add_argument("--single", action="store_true",
                    help="Tether's single-threaded runtime (default: thread-safe, TETHER_LOOP_HOST)")
    args = ap.parse_args()
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        sys.exit("suites.py: valgrind is not installed")
    prefix = no_aslr()
    variant = "single" if args.single else ""
    exes = [os.path.join(d, "bench_tether") for d in ([args.base] if args.base else []) + [args.bin]]
    for exe in exes:
        if not os.access(exe, os.X_OK):
            sys.exit("suites.py: %s not built (bash benchmarks/run.sh builds it)" % exe)
    head = ["suite", "case", "unit"] + (["base", "now", "change"] if args.base else ["instructions"])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    suites = (("kairo", [(c, c) for c in KAIRO], "per iter()"),
              ("sbench", [(c, c) for c in SBENCH], "per COUNT"),
              ("dynamic", [(str(i), t) for i, t in enumerate(DYNAMIC)], "per write"))
    for suite, cases, unit in suites:
        for case, title in cases:
            values = [count(prefix, valgrind, exe, "%s:%s" % (suite, case), SIZES[suite], variant,
                            may_lack=(suite == "dynamic" and args.base is not None and k == 0))
                      for k, exe in enumerate(exes)]
            cells = ["-" if v is None else "{:,.0f}".format(v) for v in values]
            if args.base:
                cells.append("-" if values[0] is None else
                             "{:+.1f}%".format(100.0 * (values[1] - values[0]) / values[0]))
            print("| %s | %s | %s | %s |" % (suite, title, unit, " | ".join(cells)))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

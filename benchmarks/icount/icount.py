#!/usr/bin/env python3
"""icount.py - instructions per operation, counted by callgrind, for the
section "Instruction counts" of docs/benchmarks.md (issue 16).

Wall-clock figures on this VM drift by tens of percent over minutes;
instruction counts do not. Each figure here is (I(2N) - I(N)) / N: the
instructions callgrind counts in a run doing N operations, subtracted from
a run doing 2N, so that process start, setup, warm-up and teardown cancel
out. What runs is the timed benchmark itself: every driver's
`--icount WORKLOAD N` mode (benchmarks/common/bench.h) runs its own
set+notify, fan-out or 50-deep chain code with N in place of its timed
sizes, and its checks must hold. The probes of issue 16's target table are
benchmarks/icount/icount.c.

The counts repeat exactly from run to run: address randomization off
(setarch -R), hash seeds fixed, and the printing of each result line (a
timing with more or fewer digits) left out of the count.

Units, the same for every system: set+notify and the chain per write (a
chain write propagates through 50 derived values to one effect); fan-out
per notification (one write to 1,000 observers counts 1,000).

Output: one JSON line per figure (benchmarks/common/bench.h's format,
group "icount" for the workloads, "icount-probe" for the probes), read by
benchmarks/report.py. Standard library only.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

# Driver per system, as run.sh names them in .build-bench/bin/, and the
# function whose instructions are left out (callgrind's --toggle-collect):
# the one that prints the result line, whose timing figure has more or
# fewer digits from run to run. The C and C++ drivers print with printf;
# Swift Observation's emit() builds its line itself (kept out of line).
DRIVERS = {
    "tether": ("bench_tether", "__vfprintf_internal"),
    "gobject": ("bench_gobject", "__vfprintf_internal"),
    "qt": ("bench_qt", "__vfprintf_internal"),
    "swift": ("bench_swift_observation", "$s16ObservationBench4emit*"),
}

# (workload, row name, unit, N, operations per repetition). The counts
# repeat exactly, so N only has to make one-off costs (a buffer growing
# once) small beside N operations.
WORKLOADS = [
    ("setnotify", "set+notify", "instructions/write", 10000, 1),
    ("fanout", "fan-out", "instructions/notification", 20, 1000),
    ("chain", "50-deep chain", "instructions/write", 20, 51),
]

# Tether's runtime modes: the TETHER_LOOP_HOST runtime the timed table's
# main rows use (thread-safe, no loop thread to add instructions of its
# own), and TETHER_RUNTIME_SINGLE_THREAD (no locks).
TETHER_VARIANTS = [("host", ""), ("single", " [single]")]

# (op, N, operations per repetition) of benchmarks/icount/icount.c.
PROBES = [
    ("get", 20000, 1),
    ("set", 20000, 1),
    ("sync", 20000, 1),
    ("fanout", 2000, 100),
    ("computed", 20000, 1),
    ("new", 20000, 1),
]

# Hash seeds are random per process (Swift's Hasher, Qt's QHash): fixed
# seeds make the collision patterns, and so the counts, repeat.
ENV = dict(os.environ, SWIFT_DETERMINISTIC_HASHING="1", QT_HASH_SEED="0")

COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def no_aslr():
    """`setarch -R` when it works here: with address randomization the
    start-up code that parses /proc/self/maps (valgrind's own mappings move)
    runs a few dozen instructions more or less from run to run."""
    try:
        ok = subprocess.run(["setarch", "-R", "true"], capture_output=True,
                            check=False).returncode == 0
    except OSError:
        ok = False
    return ["setarch", "-R"] if ok else []


def callgrind(prefix, valgrind, argv, skip_fn):
    """(instructions, driver's stdout, error text or None) of one run,
    leaving out skip_fn and what it calls. (This valgrind keeps one
    --toggle-collect reliably, not two.)"""
    p = subprocess.run(prefix + [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null",
                                 "--toggle-collect=" + skip_fn, "--collect-atstart=yes"] + argv,
                       capture_output=True, text=True, env=ENV, check=False)
    m = COLLECTED.findall(p.stderr)
    if p.returncode != 0 or not m:
        tail = " ".join(p.stderr.strip().splitlines()[-3:])
        return None, p.stdout, "exit status %d: %s" % (p.returncode, tail)
    return int(m[-1]), p.stdout, None


def checks_held(stdout):
    """A driver's result line says whether the workload's checks held."""
    oks = []
    for line in stdout.splitlines():
        if line.startswith("{"):
            try:
                oks.append(json.loads(line).get("ok") is True)
            except ValueError:
                pass
    return bool(oks) and all(oks)


def measure(prefix, valgrind, argv_of, n, per, skip_fn, result_lines=True):
    """Instructions per operation from runs with n and 2n repetitions of
    `per` operations each, or (None, why). result_lines: the program prints
    result lines whose "ok" must be true (the drivers); icount.c instead
    exits non-zero when a check fails."""
    counts = []
    for reps in (n, 2 * n):
        argv = argv_of(reps)
        count, out, err = callgrind(prefix, valgrind, argv, skip_fn)
        if err is None and result_lines and not checks_held(out):
            err = "a check failed (%s)" % " ".join(argv[1:])
        if err is not None:
            return None, err, counts
        counts.append(count)
    return (counts[1] - counts[0]) / (n * per), None, counts


def emit(out, sys_, group, name, unit, value, err, counts, n, per, protocol):
    r = {"sys": sys_, "group": group, "name": name, "ok": err is None, "unit": unit,
         "protocol": protocol}
    if err is None:
        r["value"] = round(value, 4)
        r.update({"n": n, "ops_per_rep": per, "i_n": counts[0], "i_2n": counts[1]})
    else:
        r["note"] = err
    out.write(json.dumps(r) + "\n")
    out.flush()
    print("  %-8s %-14s %-24s %s" % (sys_, group, name,
                                     "%12.1f %s" % (value, unit) if err is None else "FAILED: " + err),
          file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="directory of the built drivers and icount")
    ap.add_argument("--out", required=True, help="JSON lines written here")
    ap.add_argument("--systems", default="tether gobject qt swift")
    ap.add_argument("--quick", action="store_true",
                    help="N / 10 (BENCH_QUICK: checks that everything runs)")
    args = ap.parse_args()
    scale = (lambda n: max(1, n // 10)) if args.quick else (lambda n: n)
    systems = args.systems.split()
    valgrind = shutil.which("valgrind")
    with open(args.out, "w", encoding="utf-8") as out:
        if valgrind is None:
            why = "valgrind is not installed (scripts/install-bench-deps.sh installs it)"
            out.write(json.dumps({"sys": "run", "group": "icount", "name": "setup", "ok": False,
                                  "skip": True, "note": why}) + "\n")
            print("icount: skipped: " + why, file=sys.stderr)
            return 0
        version = subprocess.run([valgrind, "--version"], capture_output=True, text=True,
                                 check=False).stdout.strip()
        prefix = no_aslr()
        out.write(json.dumps({"sys": "run", "group": "icount", "name": "setup", "ok": True,
                              "valgrind": version, "no_aslr": bool(prefix)}) + "\n")
        for sys_ in [s for s in DRIVERS if s in systems]:
            driver, skip_fn = DRIVERS[sys_]
            exe = os.path.join(args.bin, driver)
            if not os.access(exe, os.X_OK):
                continue  # not built: the report says why (run.sh's status)
            variants = TETHER_VARIANTS if sys_ == "tether" else [("", "")]
            for variant, suffix in variants:
                for workload, name, unit, n, per in WORKLOADS:
                    n = scale(n)
                    def argv_of(reps, exe=exe, workload=workload, variant=variant):
                        return [exe, "--icount", workload, str(reps)] + ([variant] if variant else [])
                    value, err, counts = measure(prefix, valgrind, argv_of, n, per, skip_fn)
                    emit(out, sys_, "icount", name + suffix, unit, value, err, counts, n, per,
                         "%s --icount %s %d and %d%s, under callgrind; (I(2N) - I(N)) / %s" % (
                             driver, workload, n, 2 * n, " " + variant if variant else "",
                             "N" if per == 1 else "(N x %d)" % per))
        probe = os.path.join(args.bin, "icount")
        if "tether" in systems and os.access(probe, os.X_OK):
            for variant in ("host", "single"):
                for op, n, per in PROBES:
                    n = scale(n)
                    value, err, counts = measure(
                        prefix, valgrind, lambda reps, op=op, variant=variant:
                        [probe, op, str(reps), variant], n, per, "__vfprintf_internal",
                        result_lines=False)
                    emit(out, "tether", "icount-probe", "%s [%s]" % (op, variant),
                         "instructions/op", value, err, counts, n, per,
                         "icount %s %d and %d %s under callgrind" % (op, n, 2 * n, variant))
    return 0


if __name__ == "__main__":
    sys.exit(main())

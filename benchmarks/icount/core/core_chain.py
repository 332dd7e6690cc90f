#!/usr/bin/env python3
"""core_chain.py - instructions per recompute of the 50-deep chain on
TetherCore alone (core_chain.swift: no runtime, no lock, no C face), on a
sketch of a leaner core in alien-signals' shape (sketch_chain.swift: the
model alone, int values, none of Tether's other semantics), and through
libtether.so (`bench_tether --icount chain N`) when --bin names a directory
holding bench_tether.

    python3 benchmarks/icount/core/core_chain.py [--bin .build-bench/bin]

Builds core_chain.swift with the core's sources into one optimized module
(the release flags of Package.swift's fastPaths, whole-module), and
sketch_chain.swift alone, runs each under callgrind for N and 2N writes and
prints (I(2N) - I(N)) / N / 50.
Not run by `make bench`: issue 16's eighth round measured the floor of the
evaluation model with it (docs/performance.md). Standard library only.
"""
import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.dirname(HERE))
from icount import measure, no_aslr  # noqa: E402  (benchmarks/icount)

N = 200


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", help="directory of a bench_tether to count the C-face chain too")
    args = ap.parse_args()
    valgrind = shutil.which("valgrind")
    swiftc = shutil.which("swiftc")
    if valgrind is None or swiftc is None:
        sys.exit("core_chain.py: needs valgrind and swiftc on PATH")
    scratch = tempfile.mkdtemp(prefix="core-chain-")
    flags = ["-O", "-wmo", "-enforce-exclusivity=unchecked", "-parse-as-library"]
    core = os.path.join(scratch, "core_chain")
    sources = sorted(glob.glob(os.path.join(ROOT, "Sources", "TetherCore", "*.swift")))
    subprocess.run([swiftc, *flags, "-package-name", "tether", "-module-name", "TetherCore", *sources,
                    os.path.join(HERE, "core_chain.swift"), "-o", core], check=True)
    sketch = os.path.join(scratch, "sketch_chain")
    subprocess.run([swiftc, *flags, os.path.join(HERE, "sketch_chain.swift"), "-o", sketch], check=True)
    for label, exe in (("TetherCore alone (Swift closures, no lock, no C face)", core),
                       ("the sketch of a leaner core (sketch_chain.swift)", sketch)):
        check = subprocess.run([exe, "3"], capture_output=True, text=True)
        if not check.stdout.startswith("ok"):
            sys.exit("core_chain.py: %s: the chain's check failed: %s%s" % (exe, check.stdout, check.stderr))
        value, err, _ = measure(no_aslr(), valgrind, lambda reps, exe=exe: [exe, str(reps)], N, 50,
                                "__vfprintf_internal", result_lines=False)
        if err is not None:
            sys.exit("core_chain.py: " + err)
        print("%s: %.0f instructions a recompute" % (label, value))
    if args.bin:
        exe = os.path.join(args.bin, "bench_tether")
        value, err, _ = measure(no_aslr(), valgrind, lambda reps: [exe, "--icount", "chain", str(reps)], 20, 51 * 50,
                                "__vfprintf_internal")
        print("libtether.so (bench_tether --icount chain): %s" %
              ("%.0f instructions a recompute" % value if err is None else err))


if __name__ == "__main__":
    main()

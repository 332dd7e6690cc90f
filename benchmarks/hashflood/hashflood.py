#!/usr/bin/env python3
"""hashflood.py - what parsing an object costs by the kind of its member
names, before and after issue 29's keyed hash (docs/robustness.md, "Member
names and hash flooding").

    python3 benchmarks/hashflood/hashflood.py [--base REV] [--icount]

Builds hashflood.swift with TetherCore's sources into one optimized module
(the release flags of Package.swift's fastPaths, whole-module): once from
this tree and, with --base, once from REV's Sources/TetherCore (git archive),
and times `Value(json:)` on objects of 2,500 to 40,000 members whose names
are
  random   16 random letters and digits;
  ascii    16 random bytes 0x01-0x7F (as the next: JSON escapes included);
  old      16 bytes colliding (all 64 bits) under the unseeded mix of
           before issue 29;
  crowd    16 letters and digits whose hash under the key of a process run
           with SWIFT_DETERMINISTIC_HASHING=1 lands in the first 1/64 of
           every index: built against a key the attacker knows. Timed in a
           process with its own random key (what a peer faces), and, as a
           warning, in one with SWIFT_DETERMINISTIC_HASHING=1 (the key known).
Each figure is the best of 5 parses (fewer once they took 2 s), in ms, and
the better of --rounds such runs (default 2: every cell once, then every
cell again), as this VM's speed drifts by tens of percent over seconds.
--icount adds instructions per hash of an N-byte name, per lookup by bytes
in a 100-member object, and per 100-member object built by names "0".."99"
given as bytes and read back (kairo mux's pattern through the C face),
counted by callgrind ((I(2N) - I(N)) / N, SWIFT_DETERMINISTIC_HASHING=1 as
benchmarks/icount does).
Not run by `make bench`. Standard library only; needs swiftc (and valgrind
for --icount).
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import io

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SIZES = [2500, 10000, 20000, 40000]
FLAGS = ["-O", "-wmo", "-enforce-exclusivity=unchecked", "-parse-as-library",
         "-package-name", "tether", "-module-name", "TetherCore"]
KNOWN_KEY = dict(os.environ, SWIFT_DETERMINISTIC_HASHING="1")
RANDOM_KEY = {k: v for k, v in os.environ.items() if k != "SWIFT_DETERMINISTIC_HASHING"}


def build(swiftc, sources_dir, out):
    sources = sorted(glob.glob(os.path.join(sources_dir, "*.swift")))
    subprocess.run([swiftc, *FLAGS, *sources, os.path.join(HERE, "hashflood.swift"), "-o", out], check=True)
    return out


def base_sources(rev, scratch):
    """REV's Sources/TetherCore, unpacked under scratch."""
    tar = subprocess.run(["git", "-C", ROOT, "archive", rev, "Sources/TetherCore"],
                         capture_output=True, check=True).stdout
    dest = os.path.join(scratch, "base")
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(dest)
    return os.path.join(dest, "Sources", "TetherCore")


def run(exe, args, env=RANDOM_KEY):
    p = subprocess.run([exe, *args], capture_output=True, text=True, env=env, check=False)
    if p.returncode != 0:
        sys.exit("hashflood.py: %s %s: %s" % (exe, " ".join(args), p.stderr.strip()))
    return p.stdout.strip()


def icount(valgrind, exe, args_of, n):
    counts = []
    for reps in (n, 2 * n):
        p = subprocess.run([valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", exe, *args_of(reps)],
                           capture_output=True, text=True, env=KNOWN_KEY, check=False)
        m = re.findall(r"Collected\s*:\s*(\d+)", p.stderr)
        if p.returncode != 0 or not m:
            sys.exit("hashflood.py: callgrind failed: %s" % p.stderr[-300:])
        counts.append(int(m[-1]))
    return (counts[1] - counts[0]) / n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="a revision whose TetherCore to measure beside this tree's")
    ap.add_argument("--icount", action="store_true", help="also count instructions per hash and lookup")
    ap.add_argument("--rounds", type=int, default=2, help="runs of every cell, the best kept (default 2)")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="member counts (default %(default)s)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    swiftc = shutil.which("swiftc") or sys.exit("hashflood.py: needs swiftc on PATH")
    scratch = tempfile.mkdtemp(prefix="hashflood-")
    builds = [("this tree", build(swiftc, os.path.join(ROOT, "Sources", "TetherCore"), os.path.join(scratch, "new")))]
    if args.base:
        builds.insert(0, ("base %s" % args.base, build(swiftc, base_sources(args.base, scratch), os.path.join(scratch, "old"))))
    new = builds[-1][1]
    crowd = os.path.join(scratch, "crowd.txt")
    with open(crowd, "w") as f:
        f.write(run(new, ["crowd", str(max(sizes))], env=KNOWN_KEY) + "\n")

    table = []  # (build, names, env, kind, [best ms per size])
    for label, exe in builds:
        rows = [("random", "random", RANDOM_KEY),
                ("random 0x01-0x7F", "ascii", RANDOM_KEY),
                ("colliding under the old mix", "old", RANDOM_KEY)]
        if exe == new:
            rows += [("crowded under a known key, key random", "file", RANDOM_KEY),
                     ("crowded under a known key, key known (SWIFT_DETERMINISTIC_HASHING=1)", "file", KNOWN_KEY)]
        table += [(label, exe, name, kind, env, [float("inf")] * len(sizes)) for name, kind, env in rows]
    for _ in range(args.rounds):
        for label, exe, name, kind, env, best in table:
            for i, n in enumerate(sizes):
                extra = [crowd] if kind == "file" else []
                best[i] = min(best[i], float(run(exe, ["time", kind, str(n), "5", *extra], env=env)))
    print("| TetherCore | names | " + " | ".join("%d members" % n for n in sizes) + " |")
    print("|---|---|" + "---:|" * len(sizes))
    for label, exe, name, kind, env, best in table:
        print("| %s | %s | %s |" % (label, name, " | ".join("%.2f ms" % ms for ms in best)))
    sys.stdout.flush()

    if args.icount:
        valgrind = shutil.which("valgrind") or sys.exit("hashflood.py: --icount needs valgrind")
        print()
        print("| TetherCore | " + " | ".join("hash, %d B" % k for k in (1, 2, 8, 16, 32))
              + " | lookup by bytes, 6 B, 100 members | 100-member object built and read by bytes |")
        print("|---|" + "---:|" * 7)
        for label, exe in builds:
            cells = ["%.0f" % icount(valgrind, exe, lambda r, k=k: ["icount-hash", str(k), str(r)], 20000)
                     for k in (1, 2, 8, 16, 32)]
            cells.append("%.0f" % icount(valgrind, exe, lambda r: ["icount-lookup", "6", str(r)], 20000))
            cells.append("%.0f" % icount(valgrind, exe, lambda r: ["icount-build", str(r)], 200))
            print("| %s | %s |" % (label, " | ".join(cells)))
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()

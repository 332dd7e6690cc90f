#!/usr/bin/env python3
"""alternate.py — restart times of several tetherd binaries on one store,
taken in turn, so that the machine's load falls on all of them alike.

    python3 benchmarks/restart/alternate.py TETHERD [TETHERD ...]   (ROUNDS=5)

Fills a store as restart_time.py does (a million states written as
Transactions of 128 Sets, then 100,000 path Sets to fill the retained
log) with the first binary, then restarts it to READY=1 with each binary
in turn, ROUNDS times; prints each binary's times in seconds.
"""
import json, os, sys, shutil, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from restart_time import start, pipelined
bins = sys.argv[1:]
work = tempfile.mkdtemp(prefix="alt-restart.")
sock, data = os.path.join(work, "s.sock"), os.path.join(work, "data")
N, LOG = 1_000_000, 100_000
proc, _ = start(bins[0], sock, data, LOG)
calls = []
for base in range(0, N, 128):
    ops = [{"op": "set", "name": "s.%07d" % i, "value": {"n": i, "label": "state %d" % i}} for i in range(base, min(base + 128, N))]
    calls.append(json.dumps({"method": "io.tether.Transaction", "parameters": {"ops": ops}}).encode() + b"\0")
pipelined(sock, calls)
fill = [json.dumps({"method": "io.tether.Set", "parameters": {"name": "s.%07d" % (i % N), "path": "/n", "value": -i}}).encode() + b"\0" for i in range(LOG)]
pipelined(sock, fill)
proc.terminate(); proc.wait()
print("store bytes", sum(os.path.getsize(os.path.join(data, f)) for f in os.listdir(data)), flush=True)
res = {b: [] for b in bins}
for r in range(int(os.environ.get("ROUNDS", "5"))):
    for b in bins:
        p, ready = start(b, sock, data, LOG)
        res[b].append(round(ready, 3))
        p.terminate(); p.wait()
for b in bins: print(b, res[b], flush=True)
shutil.rmtree(work, ignore_errors=True)

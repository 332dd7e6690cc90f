#!/usr/bin/env python3
"""get_members.py — how long tetherd takes to answer a Get of an object of
n string members, beside a Get of one string of the same bytes (issue 30
§4: the reply writer was quadratic in the number of strings).

    python3 benchmarks/replies/get_members.py --tetherd .build/release/tetherd

Starts its own tetherd (--memory) on a temporary socket, sets each value
once, then times 15 Gets of each on one connection (the median is
printed, in ms, with the reply's size). Time figures: run it on a machine
that does nothing else.
"""
import argparse
import json
import os
import select
import shutil
import socket
import statistics
import subprocess
import tempfile
import time


def call(sock, method, **parameters):
    sock.sendall(json.dumps({"method": method, "parameters": parameters}).encode() + b"\0")
    data = b""
    while not data.endswith(b"\0"):
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    # Not parsed (Python's own parse of 80,000 members would be most of
    # the time measured): an error reply names its error at its end.
    if b'"error":' in data[-400:]:
        raise RuntimeError(data[-400:])
    return len(data)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tetherd", required=True)
    p.add_argument("--sizes", default="10000,20000,40000,80000")
    a = p.parse_args()
    d = tempfile.mkdtemp(prefix="tether-replies-")
    notify_path = os.path.join(d, "notify")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    path = os.path.join(d, "s")
    proc = subprocess.Popen([a.tetherd, "--memory", "--address", "unix:" + path],
                            env=dict(os.environ, NOTIFY_SOCKET=notify_path), stderr=subprocess.DEVNULL)
    try:
        while True:
            r, _, _ = select.select([notify], [], [], 30)
            if not r:
                raise RuntimeError("no READY=1")
            if b"READY=1" in notify.recv(4096):
                break
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        print("| members | Get of the object, ms | Get of one string of its bytes, ms | ratio | reply bytes |")
        print("|---:|---:|---:|---:|---:|")
        for n in [int(x) for x in a.sizes.split(",")]:
            obj = {"k%d" % i: "v" for i in range(n)}
            text = json.dumps(obj, separators=(",", ":"))
            call(s, "io.tether.Set", name="obj", value=obj)
            call(s, "io.tether.Set", name="str", value="x" * len(text))
            times = {}
            size = 0
            for name in ("obj", "str"):
                samples = []
                for _ in range(15):
                    t = time.perf_counter()
                    size = call(s, "io.tether.Get", name=name)
                    samples.append((time.perf_counter() - t) * 1000)
                times[name] = statistics.median(samples)
            print("| %d | %.2f | %.2f | %.2f | %d |" % (n, times["obj"], times["str"], times["obj"] / times["str"], size))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""profile_redis.py - redis-server's user-space instructions per call under
callgrind, for the same loads as profile_tetherd.py (set, get,
pipelined-get of 16), beside tetherd's in docs/daemon-performance.md:
each load is run with 2,000 and 4,000 calls and the difference divided by
2,000, so start-up cancels out. Not part of `make bench`.

    python3 benchmarks/daemon/profile_redis.py
"""
import os, signal, socket, subprocess, sys, tempfile, time

WORK = tempfile.mkdtemp(prefix="profile-redis.")

def run(n, load, batch=16):
    path = os.path.join(WORK, "r.sock")
    if os.path.exists(path): os.unlink(path)
    out = os.path.join(WORK, "cg.%s.%d" % (load, n))
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, "redis-server", "--port", "0", "--unixsocket", path, "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    s = socket.socket(socket.AF_UNIX)
    for _ in range(3000):
        try: s.connect(path); break
        except OSError: time.sleep(0.02)
    set_k = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n0\r\n"
    get_k = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"
    s.sendall(set_k); s.recv(100)
    if load == "get":
        for i in range(n):
            s.sendall(get_k); d = b""
            while not d.endswith(b"\r\n") or d.count(b"\r\n") < 2: d += s.recv(100)
    elif load == "set":
        for i in range(n):
            v = b"%d" % i
            s.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$%d\r\n%s\r\n" % (len(v), v)); d = b""
            while not d.endswith(b"\r\n"): d += s.recv(100)
    elif load == "pipelined-get":
        for i in range(n // batch):
            s.sendall(get_k * batch); d = b""
            while d.count(b"\r\n") < 2 * batch: d += s.recv(65536)
    p.send_signal(signal.SIGTERM); p.wait()
    tot = subprocess.run("callgrind_annotate %s | grep -m1 'PROGRAM TOTALS'" % out, shell=True, capture_output=True, text=True).stdout.split()[0]
    return int(tot.replace(",", ""))
for load in ["set", "get", "pipelined-get"]:
    a, b = run(2000, load), run(4000, load)
    print(load, (b - a) / 2000)

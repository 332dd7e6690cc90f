#!/usr/bin/env python3
"""profile_tetherd.py - runs tetherd under callgrind with one load, for
docs/daemon-performance.md. Not part of `make bench`.

    python3 benchmarks/daemon/profile_tetherd.py LOAD [N] [--out FILE]

LOAD: set (N Set calls, one at a time), get (N Get calls, one at a time),
pipelined (N Set calls, 16 per write, or --batch), pipelined-get (N Gets, the
same way), fanout (N Sets to one state watched by 100 connections, each Set
waiting for its 100 deliveries), fanout-path (the same with each watcher
watching the path /n of an object state, written at /n).
Instruction counts repeat exactly from run to run, unlike times on a busy
VM: divide a function's inclusive count by N for its cost per call.
Prints the callgrind output file; read it with
`callgrind_annotate --inclusive=yes FILE | swift demangle --simplified`.
With --tool none the daemon runs natively and the script prints its CPU
time per call instead (user and kernel, from /proc/PID/stat around the
load; use N of 100000 or more, the clock ticks are 10 ms).

The daemon is started the way bench_tetherd starts it (--memory, a socket
in a temporary directory, READY=1 on NOTIFY_SOCKET), then stopped with
SIGTERM so callgrind writes its file. --durability full or normal gives it
a store in the temporary directory instead of --memory (as the durable
section of bench_tetherd does), so the store's own work is counted too.
"""
import argparse
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time


def recv_msg(sock, buf):
    while b"\0" not in buf[0]:
        chunk = sock.recv(65536)
        if not chunk:
            raise RuntimeError("tetherd closed the connection")
        buf[0] += chunk
    msg, rest = buf[0].split(b"\0", 1)
    buf[0] = rest
    if b'"error"' in msg:
        raise RuntimeError("error reply: %r" % msg[:300])
    return msg


def cpu_times(pid):
    """(utime, stime) of pid in clock ticks."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s


def set_call(name, v):
    return b'{"method":"io.tether.Set","parameters":{"name":"%s","value":%d}}\0' % (name.encode(), v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("load", choices=["set", "get", "pipelined", "pipelined-get", "fanout", "fanout-path"])
    ap.add_argument("n", type=int, nargs="?", default=2000)
    ap.add_argument("--tetherd", default=".build/release/tetherd")
    ap.add_argument("--out", default=None)
    ap.add_argument("--tool", default="callgrind", help="callgrind, or none (no valgrind)")
    ap.add_argument("--durability", default="memory", choices=["memory", "full", "normal"],
                    help="memory (--memory, the default), or a store with --durability full / normal")
    ap.add_argument("--batch", type=int, default=16,
                    help="Sets per write for the pipelined load (16; 64 is about a group of 64 durable clients)")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="profile-tetherd.")
    sock_path = os.path.join(tmp, "tetherd.sock")
    notify_path = os.path.join(tmp, "notify")
    out = os.path.abspath(a.out or "callgrind.tetherd.%s.%d.out" % (a.load, a.n))
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    cmd = [a.tetherd, "--address", "unix:" + sock_path, "--data-dir", os.path.join(tmp, "data")]
    cmd += ["--memory"] if a.durability == "memory" else ["--durability", a.durability]
    if a.tool == "callgrind":
        # Collection starts off, and the load switches it on: startup is not counted.
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
               "--collect-atstart=no", "--toggle-collect=uv_run"] + cmd
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    log = open(os.path.join(tmp, "tetherd.log"), "w")
    daemon = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while True:
        r, _, _ = select.select([notify], [], [], 1.0)
        if r and b"READY=1" in notify.recv(4096):
            break
        if daemon.poll() is not None or time.monotonic() > deadline:
            print(open(os.path.join(tmp, "tetherd.log")).read(), file=sys.stderr)
            sys.exit("tetherd did not become ready")
    c = connect(sock_path)
    buf = [b""]
    c.sendall(set_call("k", 0))
    recv_msg(c, buf)
    watchers = []
    if a.load == "fanout-path":
        c.sendall(b'{"method":"io.tether.Set","parameters":{"name":"fan","value":{"n":0,"other":"unchanged"}}}\0')
        recv_msg(c, buf)
    if a.load in ("fanout", "fanout-path"):
        # fanout-path: each watcher watches /n of an object (a delivery of
        # a path, encoded per watcher before issue 35).
        watch = (b'{"method":"io.tether.Watch","parameters":{"names":["fan"],"path":"/n"},"more":true}\0'
                 if a.load == "fanout-path" else b'{"method":"io.tether.Watch","parameters":{"names":["fan"]},"more":true}\0')
        for _ in range(100):
            w = connect(sock_path)
            w.sendall(watch)
            wb = [b""]
            while b'"progress"' not in recv_msg(w, wb):
                pass
            watchers.append((w, wb))
    cpu0 = cpu_times(daemon.pid)
    t0 = time.monotonic()
    if a.load == "set":
        for i in range(a.n):
            c.sendall(set_call("k", i + 1))
            recv_msg(c, buf)
    elif a.load == "get":
        call = b'{"method":"io.tether.Get","parameters":{"name":"k"}}\0'
        for i in range(a.n):
            c.sendall(call)
            recv_msg(c, buf)
    elif a.load == "pipelined-get":
        call = b'{"method":"io.tether.Get","parameters":{"name":"k"}}\0'
        for b in range(a.n // a.batch):
            c.sendall(call * a.batch)
            for _ in range(a.batch):
                recv_msg(c, buf)
    elif a.load == "pipelined":
        for b in range(a.n // a.batch):
            c.sendall(b"".join(set_call("k", b * a.batch + k + 1) for k in range(a.batch)))
            for _ in range(a.batch):
                recv_msg(c, buf)
    elif a.load == "fanout-path":
        for i in range(a.n):
            c.sendall(b'{"method":"io.tether.Set","parameters":{"name":"fan","path":"/n","value":%d}}\0' % (i + 1))
            recv_msg(c, buf)
            for w, wb in watchers:
                while b'"change"' not in recv_msg(w, wb):
                    pass
    else:
        for i in range(a.n):
            c.sendall(set_call("fan", i + 1))
            recv_msg(c, buf)
            for w, wb in watchers:
                while b'"change"' not in recv_msg(w, wb):
                    pass
    secs = time.monotonic() - t0
    cpu1 = cpu_times(daemon.pid)
    c.close()
    daemon.send_signal(signal.SIGTERM)
    daemon.wait(timeout=120)
    print("%s: %d calls in %.1f s under %s" % (a.load, a.n, secs, a.tool), file=sys.stderr)
    if a.tool == "callgrind":
        print(out)
    else:
        hz = os.sysconf("SC_CLK_TCK")
        user = (cpu1[0] - cpu0[0]) / hz * 1e6 / a.n
        kern = (cpu1[1] - cpu0[1]) / hz * 1e6 / a.n
        print("tetherd CPU per %s: %.2f us user + %.2f us kernel = %.2f us" % (
            "commit (100 deliveries)" if a.load.startswith("fanout") else "call", user, kern, user + kern))
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Figures for docs/robustness.md, "Watches bounded from their first reply"
(issue 30 §5). Starts a tetherd (--memory) and measures, with raw Varlink
over its socket:

  1. RSS of the daemon with 30 Watch calls over 40 states of 1.5 MB whose
     peers never read;
  2. a Watch of "" over N states (default 1,000,000): how long a Get of
     another client waits at most while it streams to a reader, the time to
     its progress reply, and the daemon's RSS with a peer that never reads;
  3. the longest reply a watcher of /0 gets for a Transaction removing /0
     from 12 states shaped [0, <1.5 MB>].

    python3 benchmarks/daemon/watch_bounds.py .build/release/tetherd [N]
"""
import json, os, socket, subprocess, sys, tempfile, time


def rss(pid):
    fields = {}
    for line in open("/proc/%d/status" % pid):
        k, _, v = line.partition(":")
        fields[k] = v.strip()
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024


class Conn:
    def __init__(self, path, rcvbuf=None):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if rcvbuf:
            self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.s.connect(path)
        self.buf = b""

    def send(self, method, more=False, **params):
        m = {"method": "io.tether." + method, "parameters": params}
        if more:
            m["more"] = True
        self.s.sendall(json.dumps(m).encode() + b"\0")

    def raw(self):
        while b"\0" not in self.buf:
            chunk = self.s.recv(1 << 20)
            if not chunk:
                raise EOFError("closed")
            self.buf += chunk
        msg, _, self.buf = self.buf.partition(b"\0")
        return msg

    def reply(self):
        return json.loads(self.raw())

    def call(self, method, **params):
        self.send(method, **params)
        r = self.reply()
        if "error" in r:
            raise RuntimeError(r)
        return r["parameters"]


def main():
    tetherd = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    d = tempfile.mkdtemp()
    path = os.path.join(d, "tetherd.sock")
    p = subprocess.Popen([tetherd, "--address", "unix:" + path, "--memory"], stderr=subprocess.DEVNULL)
    try:
        for _ in range(500):
            if os.path.exists(path):
                break
            time.sleep(0.01)
        w = Conn(path)
        big = "x" * 1_500_000
        for i in range(40):
            w.call("Set", name="big%02d" % i, value=big)
        before = rss(p.pid)[0]
        idle = []
        for _ in range(30):
            c = Conn(path, rcvbuf=64 << 10)
            c.send("Watch", more=True, prefix="big")
            idle.append(c)
        w.call("Stats")
        time.sleep(1)
        w.call("Stats")
        after = rss(p.pid)[0]
        print("1. 30 non-reading watches over 40 x 1.5 MB: RSS %d MiB -> %d MiB" % (before >> 20, after >> 20))
        for c in idle:
            c.s.close()
        for i in range(40):
            w.call("Remove", name="big%02d" % i)

        t = time.time()
        for i in range(0, count, 128):
            ops = [{"op": "set", "name": "s%07d" % j, "value": j} for j in range(i, min(i + 128, count))]
            w.call("Transaction", ops=ops)
        print("   (%d states written in %.1f s)" % (count, time.time() - t))
        base = rss(p.pid)[0]
        nonreader = Conn(path, rcvbuf=64 << 10)
        nonreader.send("Watch", more=True, prefix="")
        reader = Conn(path)
        reader.send("Watch", more=True, prefix="")
        start = time.time()
        worst, gets, seen = 0.0, 0, 0
        reader.s.setblocking(False)
        while True:
            g = time.time()
            w.call("Get", name="s0000001")
            worst = max(worst, time.time() - g)
            gets += 1
            try:
                while True:
                    chunk = reader.s.recv(1 << 22)
                    if not chunk:
                        raise EOFError("reader cut off")
                    reader.buf += chunk
            except BlockingIOError:
                pass
            done = False
            *msgs, reader.buf = reader.buf.split(b"\0")
            for msg in msgs:
                r = json.loads(msg)["parameters"]
                if r["event"] == "snapshot":
                    seen += 1
                elif r["event"] == "progress":
                    done = True
            if done:
                break
        took = time.time() - start
        mem = rss(p.pid)[0]
        print("2. Watch \"\" over %d states: %d snapshot replies, progress after %.1f s; %d Gets meanwhile, the slowest %.0f ms;"
              " RSS with a non-reader %d MiB over the %d MiB before the watches"
              % (count, seen, took, gets, worst * 1000, mem >> 20, base >> 20))
        nonreader.s.close()
        reader.s.close()

        w.call("Transaction", ops=[{"op": "remove", "name": "s%07d" % j} for j in range(0, 128)])
        for i in range(12):
            w.call("Set", name="arr%02d" % i, value=[0, big])
        c = Conn(path)
        c.send("Watch", more=True, prefix="arr", path="/0")
        while c.reply()["parameters"]["event"] != "progress":
            pass
        txn = w.call("Transaction", ops=[{"op": "remove", "name": "arr%02d" % i, "path": "/0"} for i in range(12)])
        longest, parts = 0, 0
        while True:
            m = c.raw()
            longest = max(longest, len(m))
            r = json.loads(m)["parameters"]
            if r["event"] == "change":
                parts += 1
            if r["event"] == "progress" and r["revision"] >= txn["revision"]:
                break
        print("3. 12 x remove /0 of [0, <1.5 MB>]: %d change replies, the longest %d bytes (max_reply 16777216)" % (parts, longest))
    finally:
        p.terminate()
        p.wait()


main()

#!/usr/bin/env python3
"""etcd_bench.py --tetherd PATH [--seconds N] — tetherd on a 3-member etcd
cluster (Debian's etcd, on loopback, started here) beside etcd alone, in one
run: the figures of docs/benchmarks.md, "tetherd on etcd".

Two tetherds ("hosts" A and B) on the cluster. Every figure is measured
twice, through tetherd and against etcd directly, with the same Python
machinery (a persistent connection each, one call in flight on each), so
the difference is tetherd's overhead:

  set        one client, one write at a time: p50/p99 (tetherd: Set over
             Varlink; etcd: Put through its JSON gateway, /v3/kv/put)
  get        one client: p50/p99 (tetherd: Get, served from the host's
             mirror; etcd: a linearizable Range)
  cross-host a write on A until a watcher on B reads it: p50/p99 (etcd: a
             Put until a second client's Watch stream delivers it)
  clients    64 connections, each writing its own key, one call in flight
             each: commits/s (tetherd: 32 on each host)

The Python client costs ~30-60 us a call on this machine (both sides
pay it), so the figures are upper bounds. etcd's gateway adds its own
in-process hop: tetherd talks gRPC to etcd.
"""
import argparse
import base64
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLUSTER = os.path.join(ROOT, "scripts", "etcd-cluster.sh")
PORTS = "23379 23479 23579"


class Varlink:
    """A minimal Varlink client (NUL-framed JSON) on a persistent socket."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.buf = b""

    def send(self, method, parameters, more=False):
        call = {"method": "io.tether." + method, "parameters": parameters}
        if more:
            call["more"] = True
        self.sock.sendall(json.dumps(call, separators=(",", ":")).encode() + b"\0")

    def read(self):
        while b"\0" not in self.buf:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise EOFError("tetherd closed the connection")
            self.buf += chunk
        message, self.buf = self.buf.split(b"\0", 1)
        reply = json.loads(message)
        if "error" in reply:
            raise RuntimeError("%s %r" % (reply["error"], reply.get("parameters")))
        return reply.get("parameters", {})

    def call(self, method, **parameters):
        self.send(method, parameters)
        return self.read()


class Etcd:
    """etcd's JSON gateway on a persistent HTTP/1.1 connection."""

    def __init__(self, endpoint):
        host, port = endpoint.replace("http://", "").split(":")
        self.conn = http.client.HTTPConnection(host, int(port))

    def post(self, path, body):
        self.conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = self.conn.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError("etcd %s: %s" % (path, data[:200]))
        return json.loads(data)

    def put(self, key, value):
        return self.post("/v3/kv/put", {"key": b64(key), "value": b64(value)})

    def get(self, key):
        return self.post("/v3/kv/range", {"key": b64(key)})


def b64(text):
    return base64.b64encode(text.encode()).decode()


def percentiles(samples):
    s = sorted(samples)
    return {"p50_ms": round(s[len(s) // 2] * 1000, 3), "p99_ms": round(s[int(len(s) * 0.99)] * 1000, 3), "n": len(s)}


def timed(n, body):
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        body(i)
        out.append(time.perf_counter() - t0)
    return percentiles(out)


def cross_host_tetherd(a_sock, b_sock, n):
    writer = Varlink(a_sock)
    writer.call("Set", name="bench.cross", value=0)
    watcher = Varlink(b_sock)
    watcher.send("Watch", {"names": ["bench.cross"]}, more=True)
    while watcher.read().get("event") != "progress":
        pass
    samples = []
    for i in range(1, n + 1):
        t0 = time.perf_counter()
        writer.send("Set", {"name": "bench.cross", "value": i})
        while True:
            event = watcher.read()
            if event.get("event") == "change" and event["changes"][0].get("value") == i:
                break
        samples.append(time.perf_counter() - t0)
        writer.read()
    return percentiles(samples)


def cross_host_etcd(endpoints, n):
    writer = Etcd(endpoints[0])
    host, port = endpoints[1].replace("http://", "").split(":")
    watch = http.client.HTTPConnection(host, int(port))
    watch.request("POST", "/v3/watch", json.dumps({"create_request": {"key": b64("/bench/cross")}}))
    stream = watch.getresponse()
    stream.readline()  # the "created" response
    samples = []
    for i in range(1, n + 1):
        t0 = time.perf_counter()
        writer.put("/bench/cross", str(i))
        while True:
            line = stream.readline()
            if not line.strip():
                continue
            events = json.loads(line).get("result", {}).get("events", [])
            if any(base64.b64decode(e["kv"]["value"]).decode() == str(i) for e in events):
                break
        samples.append(time.perf_counter() - t0)
    return percentiles(samples)


def throughput(make_clients, seconds):
    """Commits/s of the clients, each writing in a thread of its own."""
    counts = []
    stop = time.monotonic() + seconds
    errors = []

    def run(client, write):
        n = 0
        try:
            while time.monotonic() < stop:
                write(client, n)
                n += 1
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(str(error))
        counts.append(n)

    threads = [threading.Thread(target=run, args=c) for c in make_clients()]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    if errors:
        print("  %d clients failed, the first: %s" % (len(errors), errors[0]), file=sys.stderr)
    return {"commits_per_s": round(sum(counts) / elapsed), "clients": len(threads)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tetherd", required=True, help="tetherd-etcd (make etcd: Backends/Etcd/.build/release/tetherd-etcd)")
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="tether-etcd-bench-")
    cluster = os.path.join(directory, "cluster")
    env = dict(os.environ, TETHER_ETCD_PORTS=PORTS)
    up = subprocess.run([CLUSTER, "up", cluster], capture_output=True, text=True, env=env)
    if up.returncode != 0:
        sys.exit("the cluster did not start: " + up.stderr)
    endpoints = up.stdout.strip().splitlines()[-1]
    hosts = []
    socks = []
    try:
        members = endpoints.split(",")
        for index, name in enumerate("ab"):
            sock = os.path.join(directory, name + ".sock")
            log = open(os.path.join(directory, name + ".log"), "w")
            # Each host names its own member first (as on real machines,
            # where each runs beside one): the two hosts use two members.
            mine = ",".join(members[index:] + members[:index])
            hosts.append(subprocess.Popen([args.tetherd, "--backend", "etcd:" + mine, "--address", "unix:" + sock],
                                          stdout=log, stderr=log))
            socks.append(sock)
            end = time.monotonic() + 30
            while True:
                try:
                    Varlink(sock).call("Stats")
                    break
                except OSError:
                    if time.monotonic() > end:
                        sys.exit("tetherd %s did not start" % name)
                    time.sleep(0.01)
        results = {}
        a = Varlink(socks[0])
        e = Etcd(members[0])
        print("set ...", file=sys.stderr)
        results["tetherd set"] = timed(args.samples, lambda i: a.call("Set", name="bench.set", value=i))
        results["etcd put"] = timed(args.samples, lambda i: e.put("/bench/put", str(i)))
        print("get ...", file=sys.stderr)
        results["tetherd get"] = timed(args.samples, lambda i: a.call("Get", name="bench.set"))
        results["etcd range (linearizable)"] = timed(args.samples, lambda i: e.get("/bench/put"))
        print("cross-host ...", file=sys.stderr)
        n = max(100, args.samples // 4)
        results["tetherd write on A, watch on B"] = cross_host_tetherd(socks[0], socks[1], n)
        results["etcd put, watch through another member"] = cross_host_etcd(members, n)
        print("64 clients ...", file=sys.stderr)
        results["tetherd 64 clients (32 a host)"] = throughput(
            lambda: [(Varlink(socks[i % 2]), lambda c, n, i=i: c.call("Set", name="bench.c%d" % i, value=n)) for i in range(64)],
            args.seconds)
        results["etcd 64 clients"] = throughput(
            lambda: [(Etcd(members[i % 3]), lambda c, n, i=i: c.put("/bench/c%d" % i, str(n))) for i in range(64)],
            args.seconds)
        for row, figures in results.items():
            print("%-40s %s" % (row, json.dumps(figures)))
    finally:
        for h in hosts:
            h.terminate()
            h.wait()
        subprocess.run([CLUSTER, "down", cluster], env=env)
        subprocess.run(["rm", "-rf", directory])


if __name__ == "__main__":
    main()

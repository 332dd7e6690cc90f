#!/usr/bin/env python3
"""scale.py — tetherd at scale on one machine, beside Redis (issue 35).

    python3 benchmarks/scale/scale.py [--states N] [--watchers W] [--tetherd PATH]

1. Memory: N small states (`state.N` = N, the same as Redis's `SET state.N
   N`), written as Transactions of 128 Sets, pipelined; the daemon's RSS
   (VmRSS) after, beside redis-server's (no persistence) holding the same
   keys; List of one page and a Get, timed.
2. Watchers: W connections each watching a distinct state, then W watching
   one state: the daemon's RSS per idle watcher, and for 20 writes to the
   watched state the time until every watcher has the change (p50/p99).
   The client is Python reading W sockets through epoll, so the fan-out
   figures include its own reading time (an upper bound): the same
   client's time to read one 100-byte message from each of W ready
   sockets is printed beside them as `client_floor_ms`.

Prints one JSON line per figure, as the other benchmark drivers do.
The restart with a full log is benchmarks/restart/restart_time.py.
"""
import argparse, json, os, resource, select, shutil, socket, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "restart"))
from restart_time import start, pipelined  # noqa: E402


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def emit(sys_, name, value, unit, **extra):
    print(json.dumps(dict({"sys": sys_, "group": "scale", "name": name, "ok": True, "value": value, "unit": unit}, **extra)),
          flush=True)


def call(sock, method, **params):
    sock.sendall(json.dumps({"method": method, "parameters": params}).encode() + b"\0")
    buf = b""
    while b"\0" not in buf:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise SystemExit("tetherd closed the connection")
        buf += chunk
    reply = json.loads(buf.split(b"\0", 1)[0])
    if "error" in reply:
        raise SystemExit("tetherd refused %s: %s" % (method, json.dumps(reply)[:300]))
    return reply


def fill_tetherd(sock_path, n):
    calls = []
    for base in range(0, n, 128):
        ops = [{"op": "set", "name": "state.%d" % i, "value": i} for i in range(base, min(base + 128, n))]
        calls.append(json.dumps({"method": "io.tether.Transaction", "parameters": {"ops": ops}}).encode() + b"\0")
    pipelined(sock_path, calls)


def redis_memory(n, work):
    if not shutil.which("redis-server"):
        print(json.dumps({"sys": "redis", "group": "scale", "name": "memory", "ok": False,
                          "note": "redis-server is missing (scripts/install-bench-deps.sh installs it)"}))
        return
    path = os.path.join(work, "redis.sock")
    proc = subprocess.Popen(["redis-server", "--port", "0", "--unixsocket", path, "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        for _ in range(500):
            try:
                s.connect(path)
                break
            except OSError:
                time.sleep(0.01)
        before = rss(proc.pid)
        t0 = time.monotonic()
        batch, pending = [], 0
        for i in range(n):
            k, v = b"state.%d" % i, b"%d" % i
            batch.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
            if len(batch) == 1024 or i == n - 1:
                s.sendall(b"".join(batch))
                pending += len(batch)
                batch = []
                got = b""
                while got.count(b"\r\n") < pending:
                    got += s.recv(1 << 20)
                pending = 0
        fill = time.monotonic() - t0
        after = rss(proc.pid)
        emit("redis", "fill", round(fill, 2), "s", states=n)
        emit("redis", "memory", after, "bytes", states=n, bytes_per_state=round((after - before) / n, 1), empty=before)
    finally:
        proc.terminate()
        proc.wait()


def open_watchers(sock_path, names):
    socks = []
    for name in names:
        w = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        w.connect(sock_path)
        w.sendall(json.dumps({"method": "io.tether.Watch", "parameters": {"names": [name]}, "more": True}).encode() + b"\0")
        socks.append(w)
    # Each answers a snapshot and a progress reply before it is idle.
    for w in socks:
        buf = b""
        while buf.count(b"\0") < 2:
            chunk = w.recv(65536)
            if not chunk:
                raise SystemExit("a watch was closed: %r" % buf[:200])
            buf += chunk
        w.setblocking(False)
    return socks


def fanout(writer, socks, name, rounds=20):
    ep = select.epoll()
    for w in socks:
        ep.register(w.fileno(), select.EPOLLIN)
    by_fd = {w.fileno(): w for w in socks}
    times = []
    for r in range(rounds):
        left = set(by_fd)
        t0 = time.monotonic()
        writer.sendall(json.dumps({"method": "io.tether.Set", "parameters": {"name": name, "value": -(r + 1)}}).encode() + b"\0")
        while left:
            for fd, _ in ep.poll(5):
                data = by_fd[fd].recv(65536)
                if b'"change"' in data:
                    left.discard(fd)
        times.append(time.monotonic() - t0)
        reply = b""
        while b"\0" not in reply:
            reply += writer.recv(65536)
        if b'"error"' in reply:
            raise SystemExit("tetherd refused the write: %r" % reply[:300])
        # Progress replies may follow: drained before the next round.
        end = time.monotonic() + 0.05
        while time.monotonic() < end:
            for fd, _ in ep.poll(0.01):
                by_fd[fd].recv(65536)
    ep.close()
    times.sort()
    return times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.99))]


def client_floor(n):
    """The client's own time to read one message from each of n ready
    sockets (measured on as many socket pairs as the descriptor limit
    allows, scaled to n)."""
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    m = max(1, min(n, (limit - 128) // 2))
    return client_floor_of(m) * n / m


def client_floor_of(n):
    pairs = [socket.socketpair() for _ in range(n)]
    ep = select.epoll()
    for a, b in pairs:
        b.setblocking(False)
        ep.register(b.fileno(), select.EPOLLIN)
    by_fd = {b.fileno(): b for _, b in pairs}
    for a, _ in pairs:
        a.sendall(b"x" * 100)
    t0 = time.monotonic()
    left = set(by_fd)
    while left:
        for fd, _ in ep.poll(5):
            by_fd[fd].recv(65536)
            left.discard(fd)
    took = time.monotonic() - t0
    for a, b in pairs:
        a.close()
        b.close()
    return took


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--states", type=int, default=1_000_000)
    ap.add_argument("--watchers", type=int, default=10_000)
    ap.add_argument("--tetherd", default=".build/release/tetherd")
    ap.add_argument("--no-redis", action="store_true")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 3 * args.watchers + 512
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    work = tempfile.mkdtemp(prefix="tether-scale.")
    sock_path, data = os.path.join(work, "tetherd.sock"), os.path.join(work, "data")
    try:
        proc, _ = start(args.tetherd, sock_path, data, 100_000)
        before = rss(proc.pid)
        t0 = time.monotonic()
        fill_tetherd(sock_path, args.states)
        fill = time.monotonic() - t0
        after = rss(proc.pid)
        emit("tetherd", "fill", round(fill, 2), "s", states=args.states)
        emit("tetherd", "memory", after, "bytes", states=args.states, bytes_per_state=round((after - before) / args.states, 1),
             empty=before)
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(sock_path)
        t0 = time.monotonic()
        listed = call(c, "io.tether.List", prefix="state.")
        emit("tetherd", "list_one_page", round((time.monotonic() - t0) * 1000, 3), "ms",
             states=len(listed.get("parameters", {}).get("states", [])))
        t0 = time.monotonic()
        call(c, "io.tether.Get", name="state.%d" % (args.states // 2))
        emit("tetherd", "get", round((time.monotonic() - t0) * 1000, 3), "ms")
        size = sum(os.path.getsize(os.path.join(data, f)) for f in os.listdir(data))
        emit("tetherd", "store_on_disk", size, "bytes", states=args.states)

        # The watched state is one of the N (a new one could pass --max-states).
        hot = "state.0"
        base = rss(proc.pid)
        distinct = open_watchers(sock_path, ["state.%d" % i for i in range(args.watchers)])
        per = (rss(proc.pid) - base) / args.watchers
        emit("tetherd", "memory_per_idle_watcher", round(per, 1), "bytes", watchers=args.watchers)
        for w in distinct:
            w.close()
        one = open_watchers(sock_path, [hot] * args.watchers)
        p50, p99 = fanout(c, one, hot)
        for w in one:
            w.close()
        emit("tetherd", "fanout_to_watchers_of_one", round(p50 * 1000, 2), "ms", p99_ms=round(p99 * 1000, 2),
             watchers=args.watchers, client_floor_ms=round(client_floor(args.watchers) * 1000, 2))
        proc.terminate()
        proc.wait()
        if not args.no_redis:
            redis_memory(args.states, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

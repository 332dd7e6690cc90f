#!/usr/bin/env python3
"""restart_time.py — how long tetherd takes to come back with a big store.

Fills a fresh data directory with N states (default one million, written as
Transactions of 128 Sets, pipelined) and then enough single Sets to fill the
retained commit log (--log-capacity, default 100000), stops the daemon with
SIGTERM, and times a restart from exec to READY=1 (systemd's readiness
datagram), three times. Prints one JSON line per figure, like the other
benchmark drivers.

    python3 benchmarks/restart/restart_time.py [--states N] [--log N] [--tetherd PATH]
"""
import argparse, json, os, shutil, socket, subprocess, sys, tempfile, time


def start(tetherd, sock, data, log_capacity):
    notify_path = os.path.join(os.path.dirname(sock), "notify")
    if os.path.exists(notify_path):
        os.unlink(notify_path)
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    notify.settimeout(600)
    t0 = time.monotonic()
    proc = subprocess.Popen([tetherd, "--address", "unix:" + sock, "--data-dir", data,
                             "--log-capacity", str(log_capacity), "--durability", "normal"],
                            env=dict(os.environ, NOTIFY_SOCKET=notify_path), stderr=subprocess.DEVNULL)
    while b"READY=1" not in notify.recv(4096):
        pass
    ready = time.monotonic() - t0
    notify.close()
    return proc, ready


def pipelined(sock_path, calls, window=64):
    """Sends NUL-terminated JSON calls, at most `window` unanswered."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock_path)
    pending, sent, buf = 0, 0, b""
    total = len(calls)
    done = 0
    while done < total:
        while sent < total and pending < window:
            s.sendall(calls[sent])
            sent += 1
            pending += 1
        chunk = s.recv(1 << 20)
        if not chunk:
            raise SystemExit("tetherd closed the connection")
        buf += chunk
        while b"\0" in buf:
            reply, buf = buf.split(b"\0", 1)
            if b'"error"' in reply:
                raise SystemExit("tetherd refused a call: " + reply.decode()[:200])
            pending -= 1
            done += 1
    s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--states", type=int, default=1_000_000)
    ap.add_argument("--log", type=int, default=100_000)
    ap.add_argument("--tetherd", default=".build/release/tetherd")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tetherd-restart.")
    sock, data = os.path.join(work, "tetherd.sock"), os.path.join(work, "data")
    try:
        proc, first = start(args.tetherd, sock, data, args.log)
        t0 = time.monotonic()
        calls = []
        for base in range(0, args.states, 128):
            ops = [{"op": "set", "name": "s.%07d" % i, "value": {"n": i, "label": "state %d" % i}}
                   for i in range(base, min(base + 128, args.states))]
            calls.append(json.dumps({"method": "io.tether.Transaction", "parameters": {"ops": ops}}).encode() + b"\0")
        pipelined(sock, calls)
        fill = [json.dumps({"method": "io.tether.Set", "parameters": {"name": "s.%07d" % (i % args.states), "path": "/n",
                                                                          "value": -i}}).encode() + b"\0"
                for i in range(args.log)]
        pipelined(sock, fill)
        written = time.monotonic() - t0
        proc.terminate()
        proc.wait()
        size = sum(os.path.getsize(os.path.join(data, f)) for f in os.listdir(data))
        print(json.dumps({"sys": "tetherd", "group": "restart", "name": "fill", "ok": True, "value": round(written, 2),
                          "unit": "s", "states": args.states, "log": args.log, "store_bytes": size}))
        times = []
        for _ in range(3):
            proc, ready = start(args.tetherd, sock, data, args.log)
            times.append(ready)
            proc.terminate()
            proc.wait()
        print(json.dumps({"sys": "tetherd", "group": "restart", "name": "restart_to_ready", "ok": True,
                          "value": round(min(times), 3), "unit": "s", "runs": [round(t, 3) for t in times],
                          "states": args.states, "log": args.log, "store_bytes": size}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""prometheus_test.py — tetherd's metrics, scraped by a real Prometheus.

    prometheus_test.py TETHERD TETHERCTL

Starts a tetherd of its own (a durable store in a temporary directory,
`--metrics 127.0.0.1:0`) and Debian's `prometheus` on a loopback port with a
scrape configuration for it, then checks, with deadlines and polling (no
fixed sleeps):

  1. the exposition parses with PyPI's prometheus_client parser (a reader
     nobody here wrote), with the metric names and types docs/daemon.md
     lists, and no state name in it (no --metrics-names);
  2. Prometheus' HTTP API reports the target up, and `up` is 1;
  3. after N writes made here, `tetherd_commits_total` as Prometheus
     scraped it rose by exactly N, `tetherd_calls_total{method=
     "io.tether.Set"}` by N, the revision equals what `tetherctl stats`
     says, and the fsync histogram counted groups;
  4. `tetherctl metrics` prints the same families (io.tether.Metrics);
  5. the HTTP endpoint's bounds: another path is 404, another method 405, a
     request head past 8 KiB is 431, and a ninth idle connection is closed
     while eight are held, after which a scrape still works.

Exit 0: every check held; 1: one failed; 77: prometheus or
prometheus_client is missing (skipped; scripts/install-deps.sh installs
both).
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

DEADLINE = 60.0
failures = []


def check(cond, what):
    print(("ok:   " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)
    return cond


def wait_for(what, probe, timeout=DEADLINE):
    """Polls probe() until it returns something true; returns it (None at the deadline)."""
    end = time.monotonic() + timeout
    delay = 0.05
    while time.monotonic() < end:
        got = probe()
        if got:
            return got
        time.sleep(delay)  # polling interval, not a wait for an event
        delay = min(delay * 2, 0.5)
    print("timed out waiting for " + what)
    return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read().decode()


def raw_http(port, request, timeout=5):
    """Sends raw bytes, returns the status line ('' when closed first)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        try:
            s.sendall(request)
        except OSError:
            pass
        data = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
    return data.split(b"\r\n", 1)[0].decode(errors="replace")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    tetherd, tetherctl = sys.argv[1], sys.argv[2]
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        print("metrics_prometheus: skipped (prometheus is not installed: apt-get install prometheus)")
        return 77
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        print("metrics_prometheus: skipped (the Python prometheus_client package is missing: pip install prometheus_client)")
        return 77

    tmp = tempfile.mkdtemp(prefix="tether-metrics-")
    procs = []
    try:
        sock = "unix:" + os.path.join(tmp, "tetherd.sock")
        log_path = os.path.join(tmp, "tetherd.log")
        log = open(log_path, "w")
        daemon = subprocess.Popen([tetherd, "--address", sock, "--data-dir", os.path.join(tmp, "data"),
                                   "--metrics", "127.0.0.1:0"], stdout=log, stderr=log)
        procs.append(daemon)

        def metrics_line():
            with open(log_path) as f:
                for line in f:
                    if "metrics:" in line and "http://" in line:
                        return line.split("http://", 1)[1].split("/", 1)[0]
            return None
        address = wait_for("tetherd's metrics address in its log", metrics_line)
        if not check(address is not None, "tetherd says where its metrics are"):
            return 1
        port = int(address.rsplit(":", 1)[1])
        url = "http://%s/metrics" % address

        env = dict(os.environ, TETHER_ADDRESS=sock)

        def ctl(*args):
            return subprocess.run([tetherctl] + list(args), env=env, capture_output=True, text=True, timeout=30)

        secret = "secret-name-for-metrics"
        check(ctl("set", secret, '"x"').returncode == 0, "a first write")

        # 1. The exposition, read by prometheus_client.
        status, text = http_get(url)
        check(status == 200, "GET /metrics is 200")
        families = {f.name: f for f in text_string_to_metric_families(text)}
        expected = {
            "tetherd_commits": "counter", "tetherd_calls": "counter", "tetherd_call_errors": "counter",
            "tetherd_connections_open": "gauge", "tetherd_connections": "counter",
            "tetherd_refused_peers": "counter", "tetherd_cut_off_peers": "counter",
            "tetherd_watchers_open": "gauge", "tetherd_watchers": "counter", "tetherd_watch_resyncs": "counter",
            "tetherd_group_commit_size": "histogram", "tetherd_fsync_seconds": "histogram",
            "tetherd_store_bytes": "gauge", "tetherd_log_bytes": "gauge", "tetherd_log_commits": "gauge",
            "tetherd_log_oldest_revision": "gauge", "tetherd_revision": "gauge", "tetherd_states": "gauge",
        }
        for name, kind in expected.items():
            check(name in families and families[name].type == kind,
                  "%s is a %s (%s)" % (name, kind, families[name].type if name in families else "missing"))
        check(secret not in text, "no state name in the metrics without --metrics-names")
        store_bytes = [s.value for s in families["tetherd_store_bytes"].samples]
        check(store_bytes and store_bytes[0] > 0, "the store's files have bytes")

        # 2. Prometheus scrapes it.
        prom_port = free_port()
        config = os.path.join(tmp, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "scrape_configs:\n  - job_name: tetherd\n    static_configs:\n"
                    "      - targets: ['%s']\n" % address)
        prom_log = open(os.path.join(tmp, "prometheus.log"), "w")
        prom = subprocess.Popen([prometheus, "--config.file=" + config,
                                 "--storage.tsdb.path=" + os.path.join(tmp, "prom"),
                                 "--web.listen-address=127.0.0.1:%d" % prom_port],
                                stdout=prom_log, stderr=prom_log)
        procs.append(prom)
        api = "http://127.0.0.1:%d/api/v1/" % prom_port

        def api_get(path, **params):
            try:
                _, body = http_get(api + path + ("?" + urllib.parse.urlencode(params) if params else ""))
                reply = json.loads(body)
                return reply["data"] if reply.get("status") == "success" else None
            except (OSError, ValueError):
                return None

        def target_up():
            data = api_get("targets")
            if not data:
                return None
            ups = [t for t in data.get("activeTargets", []) if t.get("health") == "up"]
            return ups or None
        check(wait_for("Prometheus to report the target up", target_up) is not None,
              "Prometheus' API reports the tetherd target up")

        def query(expr):
            data = api_get("query", query=expr)
            if not data or not data.get("result"):
                return None
            return float(data["result"][0]["value"][1])
        check(wait_for("up == 1", lambda: query('up{job="tetherd"}') == 1.0) is not None, "up{job=\"tetherd\"} is 1")

        # 3. Writes made here, counted exactly. The baseline is the daemon's
        # own count, reached by Prometheus' scrapes first.
        _, now = http_get(url)
        base = {f.name: f for f in text_string_to_metric_families(now)}
        commits0 = base["tetherd_commits"].samples[0].value
        sets0 = [s.value for s in base["tetherd_calls"].samples if s.labels.get("method") == "io.tether.Set"][0]
        check(wait_for("Prometheus to see the baseline", lambda: query("tetherd_commits_total") == commits0) is not None,
              "Prometheus sees tetherd_commits_total = %d before the writes" % commits0)
        n = 25
        for i in range(n):
            ctl("set", "app.counter", str(i + 1))
        got = wait_for("the commits in Prometheus", lambda: query("tetherd_commits_total") == commits0 + n)
        check(got is not None, "tetherd_commits_total rose by exactly %d in Prometheus (%s)" %
              (n, query("tetherd_commits_total")))
        got = wait_for("the Set calls in Prometheus",
                       lambda: query('tetherd_calls_total{method="io.tether.Set"}') == sets0 + n)
        check(got is not None, "tetherd_calls_total{method=\"io.tether.Set\"} rose by exactly %d" % n)
        stats = json.loads(ctl("stats").stdout)
        check(wait_for("the revision", lambda: query("tetherd_revision") == stats["revision"]) is not None,
              "tetherd_revision in Prometheus is the daemon's revision (%d)" % stats["revision"])
        fsyncs = query("tetherd_fsync_seconds_count")
        check(fsyncs is not None and fsyncs >= 1, "the fsync histogram counted groups (%s)" % fsyncs)
        groups = query("tetherd_group_commit_size_sum")
        check(groups is not None and groups >= n, "the group sizes add up to the commits at least (%s)" % groups)

        # 4. The same text over Varlink.
        over_varlink = ctl("metrics")
        check(over_varlink.returncode == 0, "tetherctl metrics works")
        names = {f.name for f in text_string_to_metric_families(over_varlink.stdout)}
        check(names == set(families), "tetherctl metrics prints the same families")

        # 5. The endpoint's bounds.
        check(raw_http(port, b"GET /other HTTP/1.1\r\nHost: x\r\n\r\n").startswith("HTTP/1.1 404"), "another path is 404")
        check(raw_http(port, b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n").startswith("HTTP/1.1 405"), "POST is 405")
        check(raw_http(port, b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 9000).startswith("HTTP/1.1 431"),
              "a request head past 8 KiB is 431")
        held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(8)]
        try:
            # Accepted in order: once the ninth is closed, the eight are open.
            extra = socket.create_connection(("127.0.0.1", port), timeout=5)
            try:
                extra.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
                closed = extra.recv(1) == b""  # closed with no reply
            except ConnectionResetError:
                closed = True  # closed with the request unread: a reset
            extra.close()
            check(closed, "a ninth connection is closed while eight are open")
        finally:
            for s in held:
                s.close()

        def scrape_ok():
            try:
                return http_get(url)[0] == 200
            except OSError:
                return False
        check(wait_for("a scrape after the held connections close", scrape_ok) is not None,
              "metrics are served again once those connections close")
        check(daemon.poll() is None, "tetherd still runs")
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if failures:
            for name in ("tetherd.log", "prometheus.log"):
                path = os.path.join(tmp, name)
                if os.path.exists(path):
                    print("---- " + name)
                    with open(path) as f:
                        print("".join(f.readlines()[-30:]))
        shutil.rmtree(tmp, ignore_errors=True)
    print("metrics_prometheus: %s" % ("ok" if not failures else "%d failed" % len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

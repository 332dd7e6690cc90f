#!/bin/bash
# log_bytes.sh TETHERD COUNT BYTES [tetherd options] — issue 30 §3's figure:
# COUNT Sets of one state to a BYTES-long string (one client, one call at a
# time, --durability normal), a clean stop, the store's size, then a
# restart's peak RSS (VmHWM) beside the same daemon's on an empty store.
# docs/robustness.md, "the log on disk and at a restart, bounded in bytes".
set -e
T=$1 count=$2 bytes=$3; shift 3
d=$(mktemp -d /tmp/tether-logbytes.XXXX)
trap 'rm -rf "$d"' EXIT
start() {  # data-dir log
  "$T" --address unix:$d/s --data-dir "$1" --durability normal "${@:3}" 2>"$2" & pid=$!
  while [ ! -S $d/s ]; do sleep 0.1; done
}
stop() { kill -TERM $pid; wait $pid; rm -f $d/s; }
start $d/data $d/log1 "$@"
python3 - $d/s $count $bytes <<'PY'
import json, socket, sys
path, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
s = socket.socket(socket.AF_UNIX); s.connect(path)
buf, filler = b"", "x" * size
for i in range(count):
    s.sendall(json.dumps({"method": "io.tether.Set", "parameters": {"name": "big", "value": str(i) + filler}}).encode() + b"\0")
    while b"\0" not in buf:
        buf += s.recv(65536)
    reply, buf = buf.split(b"\0", 1)
    if b'"error"' in reply: sys.exit(reply[:300])
PY
stop
echo "store: $(stat -c %s $d/data/tether.db) bytes, wal: $(stat -c %s $d/data/tether.db-wal 2>/dev/null || echo 0)"
start $d/data $d/log2 "$@"
echo "restart: $(grep VmHWM /proc/$pid/status)"; grep "store path" $d/log2
stop
start $d/empty $d/log3 "$@"
echo "empty store: $(grep VmHWM /proc/$pid/status)"
stop

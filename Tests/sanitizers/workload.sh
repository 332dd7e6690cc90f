#!/usr/bin/env bash
# workload.sh TETHERD TETHERCTL [WRAPPER...] — a short tetherctl workload
# against a daemon of its own, ending in SIGTERM; exits with the daemon's
# status (0: a clean stop). WRAPPER (e.g. valgrind --leak-check=full) runs
# the daemon. Used by daemon.sh (ASan) and `make valgrind-daemon`.
set -euo pipefail
tetherd=$1 ctl=$2
shift 2
dir=$(mktemp -d "${TMPDIR:-/tmp}/tetherd-workload.XXXXXX")
trap 'rm -rf "$dir"' EXIT
addr=unix:$dir/tetherd.sock
"$@" "$tetherd" --address "$addr" --data-dir "$dir/data" --progress-interval 100 2> "$dir/tetherd.log" &
pid=$!
ok=0
for _ in $(seq 600); do  # a daemon under valgrind takes seconds to start
  "$ctl" --timeout 300 --address "$addr" stats > /dev/null 2>&1 && { ok=1; break; }
  kill -0 $pid 2>/dev/null || break
  sleep 0.1
done
[ $ok = 1 ] || { cat "$dir/tetherd.log"; echo "workload: the daemon did not answer"; exit 1; }
"$ctl" --timeout 300 --address "$addr" set settings '{"count":0}' > /dev/null
"$ctl" --timeout 300 --address "$addr" watch settings > "$dir/watch.out" 2>&1 &
watcher=$!
for i in $(seq 1 50); do "$ctl" --timeout 300 --address "$addr" set settings /count "$i" > /dev/null; done
"$ctl" --timeout 300 --address "$addr" set blob '"hello"' > /dev/null
"$ctl" --timeout 300 --address "$addr" get settings > /dev/null
"$ctl" --timeout 300 --address "$addr" list > /dev/null
"$ctl" --timeout 300 --address "$addr" snapshot "$dir/snap.db" > /dev/null
"$ctl" --timeout 300 --address "$addr" compact > /dev/null
"$ctl" --timeout 300 --address "$addr" rm blob > /dev/null
# The watch ends with the daemon (SIGTERM below); it must have seen the
# last write: its lines are checked after.
kill -TERM $pid
status=0
wait $pid || status=$?
wait $watcher 2>/dev/null || true
cat "$dir/tetherd.log"
grep -q '"value":50' "$dir/watch.out" || { echo "workload: the watch did not see the last write"; cat "$dir/watch.out"; exit 1; }
echo "workload: 50 sets, a watch, get, list, snapshot, compact, remove; daemon exit status $status"
exit $status

#!/usr/bin/env bash
# wal_frames.sh [BINDIR] — WAL frames a one-state commit writes: tetherd
# (--durability full) in a fresh data directory, 20 warm-up Sets, then the
# growth of tether.db-wal over 200 Sets (one tetherctl call each, so every
# Set is a group of its own) divided by 200 and by a frame (4 KiB page +
# 24-byte header). No checkpoint can intervene: 200 commits stay far below
# the checkpointer's 1,000 pages. docs/daemon-performance.md, "Durable commits".
set -euo pipefail
bin=${1:-.build/release}
dir=$(mktemp -d "${TMPDIR:-/tmp}/wal-frames.XXXXXX")
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
addr=unix:$dir/s.sock
"$bin/tetherd" --data-dir "$dir" --address "$addr" --durability full 2> "$dir/log" &
pid=$!
for _ in $(seq 100); do "$bin/tetherctl" --address "$addr" stats > /dev/null 2>&1 && break; sleep 0.1; done
for i in $(seq 1 20); do "$bin/tetherctl" --address "$addr" set "s$((i % 4))" "$i" > /dev/null; done
before=$(stat -c %s "$dir/tether.db-wal")
for i in $(seq 1 200); do "$bin/tetherctl" --address "$addr" set "s$((i % 4))" "$i" > /dev/null; done
after=$(stat -c %s "$dir/tether.db-wal")
python3 -c "print('WAL frames per commit: %.3f' % (($after - $before) / 4120 / 200))"

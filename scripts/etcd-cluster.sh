#!/usr/bin/env bash
# etcd-cluster.sh up|down|status [DIR] — a 3-member cluster of Debian's etcd
# on loopback, for tetherd's etcd backend (docs/daemon.md, "Several
# machines"). Clients: 127.0.0.1:22379, :22479, :22579; peers on the
# next port up. Not 2379: installing etcd-server enables a unit there.
#
# DIR (default .build/etcd-cluster) holds each member's data, log and
# PID; `down` stops the members by PID (never by name: another etcd of
# the machine is not ours) and removes DIR. The limits are the ones the
# backend needs (Backends/Etcd/README.md): a Transaction of 128 ops
# is up to 257 Txn ops, and a commit up to 7.5 MiB.
# TETHER_ETCD_PORTS="22379 22479 22579" (the default) picks the client
# ports, below the ephemeral range (32768 on): a port of a client
# connection is never one of them. (Not ETCD_...: etcd reads its
# environment as flags.)
set -euo pipefail
cmd=${1:-}
dir=${2:-.build/etcd-cluster}
ports=(${TETHER_ETCD_PORTS:-22379 22479 22579})
names=(m1 m2 m3)

need() {
  command -v etcd >/dev/null && command -v etcdctl >/dev/null && return
  echo "etcd-cluster: etcd and etcdctl are missing: apt-get install etcd-server etcd-client (scripts/install-deps.sh --etcd does it)" >&2
  exit 1
}

# alive PID: running, and not a zombie (a member killed after the shell
# that started it exited is reparented, and may not be reaped at once).
alive() {
  kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

endpoints() {
  local out=() p
  for p in "${ports[@]}"; do out+=("http://127.0.0.1:$p"); done
  (IFS=,; echo "${out[*]}")
}

up() {
  need
  mkdir -p "$dir"
  local initial=() i
  for i in 0 1 2; do initial+=("${names[$i]}=http://127.0.0.1:$((ports[$i] + 1))"); done
  local cluster token="tether-$$-$RANDOM"
  cluster=$(IFS=,; echo "${initial[*]}")
  for i in 0 1 2; do
    local name=${names[$i]} port=${ports[$i]}
    if [ -f "$dir/$name.pid" ] && alive "$(cat "$dir/$name.pid")"; then continue; fi
    etcd --name "$name" --data-dir "$dir/$name.data" \
      --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
      --listen-peer-urls "http://127.0.0.1:$((port + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
      --initial-cluster "$cluster" --initial-cluster-token "$token" --initial-cluster-state new \
      --max-txn-ops 512 --max-request-bytes 8388608 --quota-backend-bytes 4294967296 \
      --auto-compaction-retention 0 --log-level warn --logger zap \
      > "$dir/$name.log" 2>&1 &
    echo $! > "$dir/$name.pid"
  done
  # Ready when every member answers health (at most 30 s).
  local deadline=$((SECONDS + 30))
  until ETCDCTL_API=3 etcdctl --endpoints "$(endpoints)" --command-timeout=2s endpoint health >/dev/null 2>&1; do
    if [ $SECONDS -ge $deadline ]; then
      echo "etcd-cluster: not healthy after 30 s; the members' logs:" >&2
      tail -n 5 "$dir"/*.log >&2
      down
      exit 1
    fi
    for i in 0 1 2; do
      if ! alive "$(cat "$dir/${names[$i]}.pid")"; then
        echo "etcd-cluster: member ${names[$i]} exited:" >&2
        tail -n 5 "$dir/${names[$i]}.log" >&2
        down
        exit 1
      fi
    done
    sleep 0.2
  done
  echo "$(endpoints)"
}

down() {
  local i pid
  for i in 0 1 2; do
    [ -f "$dir/${names[$i]}.pid" ] || continue
    pid=$(cat "$dir/${names[$i]}.pid")
    kill "$pid" 2>/dev/null || true
  done
  for i in 0 1 2; do
    [ -f "$dir/${names[$i]}.pid" ] || continue
    pid=$(cat "$dir/${names[$i]}.pid")
    for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  done
  rm -rf "$dir"
}

case $cmd in
  up) up ;;
  down) down ;;
  status) ETCDCTL_API=3 etcdctl --endpoints "$(endpoints)" endpoint status -w table ;;
  *) echo "usage: $0 up|down|status [DIR]" >&2; exit 2 ;;
esac

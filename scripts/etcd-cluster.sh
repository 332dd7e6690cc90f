#!/usr/bin/env bash
# etcd-cluster.sh up|down|status [DIR] | cut|heal MEMBER [DIR]
# — a 3-member cluster of Debian's etcd
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
#
# TETHER_ETCD_NETNS=1 (root): each member in a network namespace of its
# own (tether-m1…3, 10.77.0.11…13), joined to the machine by a veth pair on
# a bridge (tetherbr0, 10.77.0.1), so that `cut m2` takes member 2 off the
# network (its end of the bridge down: peers and clients alike) and `heal
# m2` brings it back: a partition, on this machine only.
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

netns=${TETHER_ETCD_NETNS:-}

# host I: member I's address.
host() {
  if [ -n "$netns" ]; then echo "10.77.0.$((11 + $1))"; else echo 127.0.0.1; fi
}

endpoints() {
  local out=() i
  for i in 0 1 2; do out+=("http://$(host $i):${ports[$i]}"); done
  (IFS=,; echo "${out[*]}")
}

# The bridge, and each member's namespace and veth pair (made once).
net_up() {
  ip link show tetherbr0 >/dev/null 2>&1 || {
    ip link add tetherbr0 type bridge
    ip addr add 10.77.0.1/24 dev tetherbr0
    ip link set tetherbr0 up
  }
  local i n
  for i in 0 1 2; do
    n=$((i + 1))
    ip netns list | grep -qw "tether-m$n" && continue
    ip netns add "tether-m$n"
    ip link add "tveth$n" type veth peer name "tveth${n}p"
    ip link set "tveth${n}p" netns "tether-m$n"
    ip link set "tveth$n" master tetherbr0 up
    ip netns exec "tether-m$n" ip addr add "$(host $i)/24" dev "tveth${n}p"
    ip netns exec "tether-m$n" ip link set "tveth${n}p" up
    ip netns exec "tether-m$n" ip link set lo up
  done
}

net_down() {
  local n
  for n in 1 2 3; do
    ip link del "tveth$n" 2>/dev/null || true
    ip netns del "tether-m$n" 2>/dev/null || true
  done
  ip link del tetherbr0 2>/dev/null || true
}

up() {
  need
  mkdir -p "$dir"
  local initial=() i
  [ -z "$netns" ] || net_up
  for i in 0 1 2; do initial+=("${names[$i]}=http://$(host $i):$((ports[$i] + 1))"); done
  local cluster token="tether-$$-$RANDOM"
  cluster=$(IFS=,; echo "${initial[*]}")
  for i in 0 1 2; do
    local name=${names[$i]} port=${ports[$i]}
    if [ -f "$dir/$name.pid" ] && alive "$(cat "$dir/$name.pid")"; then continue; fi
    local addr wrap=()
    addr=$(host $i)
    [ -z "$netns" ] || wrap=(ip netns exec "tether-$name")  # execs etcd: $! is its pid
    "${wrap[@]}" etcd --name "$name" --data-dir "$dir/$name.data" \
      --listen-client-urls "http://$addr:$port" --advertise-client-urls "http://$addr:$port" \
      --listen-peer-urls "http://$addr:$((port + 1))" --initial-advertise-peer-urls "http://$addr:$((port + 1))" \
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
  [ -z "$netns" ] || net_down
}

# cut|heal mN: member N off the network, or back on it (netns mode only).
link() {
  [ -n "$netns" ] || { echo "etcd-cluster: $1 needs TETHER_ETCD_NETNS=1" >&2; exit 2; }
  local n=${2#m}
  ip link set "tveth$n" "$([ "$1" = cut ] && echo down || echo up)"
}

case $cmd in
  cut|heal) dir=${3:-.build/etcd-cluster}; link "$cmd" "${2:?member: m1, m2 or m3}" ;;
  up) up ;;
  down) down ;;
  status) ETCDCTL_API=3 etcdctl --endpoints "$(endpoints)" endpoint status -w table ;;
  *) echo "usage: $0 up|down|status [DIR] | cut|heal MEMBER [DIR]" >&2; exit 2 ;;
esac

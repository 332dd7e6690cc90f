#!/usr/bin/env bash
# generate.sh — regenerates Sources/EtcdAPI from etcd 3.4.23's protocol
# (the .proto files of Debian's golang-etcd-server-dev) with protoc and the
# Swift plugins of swift-protobuf 1.39.0 and grpc-swift-protobuf 2.4.1.
# Run by hand when the protocol changes, never by a build: its output is
# committed (building the plugins takes minutes). Running it again on the
# same inputs gives the same files (the check at its end says so when
# CHECK=1: it regenerates into a temporary folder and compares).
#
#   apt-get install protobuf-compiler golang-etcd-server-dev
#   Backends/Etcd/scripts/generate.sh            # writes Sources/EtcdAPI
#   CHECK=1 Backends/Etcd/scripts/generate.sh    # compares only
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
package=$(dirname "$here")
src=/usr/share/gocode/src/go.etcd.io/etcd
plugins=${PLUGINS:-$package/.build-plugins}
for need in protoc; do
  command -v $need >/dev/null || { echo "generate.sh: $need is missing: apt-get install protobuf-compiler" >&2; exit 1; }
done
[ -f "$src/etcdserver/etcdserverpb/rpc.proto" ] || { echo "generate.sh: etcd's .proto files are missing: apt-get install golang-etcd-server-dev" >&2; exit 1; }

# The plugins, built once into $plugins (a scratch package of their own).
if [ ! -x "$plugins/.build/release/protoc-gen-swift" ] || [ ! -x "$plugins/.build/release/protoc-gen-grpc-swift-2" ]; then
  mkdir -p "$plugins"
  cat > "$plugins/Package.swift" <<'SWIFT'
// swift-tools-version:6.1
import PackageDescription
let package = Package(name: "plugins", dependencies: [
  .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
  .package(url: "https://github.com/grpc/grpc-swift-protobuf", exact: "2.4.1"),
], targets: [])
SWIFT
  (cd "$plugins" && swift build -c release --product protoc-gen-swift && swift build -c release --product protoc-gen-grpc-swift-2)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/proto" "$work/out"
python3 "$here/strip_proto.py" "$src/etcdserver/etcdserverpb/rpc.proto" "$work/proto/rpc.proto"
python3 "$here/strip_proto.py" "$src/mvcc/mvccpb/kv.proto" "$work/proto/kv.proto"
python3 "$here/strip_proto.py" "$src/auth/authpb/auth.proto" "$work/proto/auth.proto"
protoc -I "$work/proto" \
  --plugin=protoc-gen-swift="$plugins/.build/release/protoc-gen-swift" \
  --plugin=protoc-gen-grpc-swift="$plugins/.build/release/protoc-gen-grpc-swift-2" \
  --swift_out="$work/out" --swift_opt=Visibility=Public \
  --grpc-swift_out="$work/out" --grpc-swift_opt=Visibility=Public,Client=true,Server=false \
  rpc.proto kv.proto auth.proto
out=$package/Sources/EtcdAPI
if [ "${CHECK:-0}" = 1 ]; then
  diff -r "$work/out" "$out" && echo "generate.sh: Sources/EtcdAPI is what the script makes"
  exit
fi
rm -f "$out"/*.swift
cp "$work/out"/*.swift "$out/"
ls -l "$out"

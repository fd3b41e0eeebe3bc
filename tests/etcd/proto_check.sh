#!/usr/bin/env bash
# ctest etcd_proto_check: dlock's etcd_rpc.proto against etcd's own .proto files as Debian
# ships them (golang-etcd-server-dev and the two packages its rpc.proto imports from),
# downloaded as .debs with apt-get and unpacked here -- no copy enters the repository, and
# none of their ~130 Go dependencies is installed. Exit 77 (skipped) when the packages cannot
# be downloaded (no network, no apt).
#   proto_check.sh CHECKER SOURCE_DIR
set -euo pipefail
checker=$1 source_dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
if ! apt-get download golang-etcd-server-dev golang-github-gogo-protobuf-dev \
    golang-github-grpc-ecosystem-grpc-gateway-dev >download.log 2>&1; then
  echo "skipped: cannot download etcd's .proto packages:"; cat download.log; exit 77
fi
for d in ./*.deb; do dpkg-deb -x "$d" root; done
g=root/usr/share/gocode/src
protoc -I"$g/go.etcd.io" -I"$g/github.com/gogo/protobuf" \
  -I"$g/github.com/grpc-ecosystem/grpc-gateway/third_party/googleapis" \
  -I"$(pkg-config --variable=includedir protobuf)" \
  --include_imports --descriptor_set_out=etcd.pb etcd/etcdserver/etcdserverpb/rpc.proto
protoc -I"$source_dir/src/backends/etcd" --descriptor_set_out=ours.pb etcd_rpc.proto
"$checker" ours.pb etcd.pb

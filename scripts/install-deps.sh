#!/usr/bin/env bash
# Installs the Debian 12 packages dlock builds (`build`) or builds and tests (`test`, the
# default) with, if any is missing.
# Idempotent and quiet when everything is there; needs root (or sudo) only to install.
set -euo pipefail

# What building libdlock, the CLI and the examples needs (`make demo`).
build_packages=(
  build-essential cmake pkg-config git
  libsqlite3-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libhiredis-dev libzookeeper-mt-dev libpq-dev libmariadb-dev
  prometheus-cpp-dev  # libdlock-prometheus (dlock::prometheus)
  # etcd (libdlock-etcd): gRPC, and protobuf spelled out (only a Recommends of protoc);
  # gRPC's CMake package insists on every grpc_*_plugin, hence protobuf-compiler-grpc.
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
)
# What the tests and benchmarks add (`make test`): the test frameworks, the servers the tests
# start on loopback, and clang for the fuzz targets.
test_packages=(
  libgtest-dev libgmock-dev libbenchmark-dev
  redis-server redis-sentinel zookeeper default-jre-headless postgresql mariadb-server pgbouncer
  etcd-server etcd-client  # etcd on loopback; etcdctl for the lock interop tests
  faketime libfaketime
  python3 python3-kazoo procps iproute2
  faketime libfaketime
  clang-16 libclang-rt-16-dev
  prometheus  # promtool checks the text format of `dlock run --metrics-file`
  bindfs      # a real FUSE mount, where a SQLite lock file is refused
)

case "${1:-test}" in
  build) packages=("${build_packages[@]}") ;;
  test) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: $0 [build|test]" >&2; exit 64 ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

echo "installing: ${missing[*]}"
SUDO=""
[[ $(id -u) == 0 ]] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

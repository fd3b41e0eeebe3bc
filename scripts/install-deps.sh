#!/usr/bin/env bash
# Installs the Debian 12 packages dlock builds and tests with, if any is missing.
# Idempotent and quiet when everything is there; needs root (or sudo) only to install.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libsqlite3-dev libcli11-dev libfmt-dev nlohmann-json3-dev
  libhiredis-dev libzookeeper-mt-dev libpq-dev libmariadb-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  redis-server zookeeper default-jre-headless postgresql pgbouncer mariadb-server
  python3 procps iproute2
  clang-16 libclang-rt-16-dev
)

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

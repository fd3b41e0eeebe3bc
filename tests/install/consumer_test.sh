#!/usr/bin/env bash
# Installs dlock into a temporary prefix and builds examples/ against it twice: through
# find_package(dlock) and through pkg-config. Then runs the example on a temporary database.
set -euo pipefail
build_dir=$1
source_dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build_dir" --prefix "$tmp/prefix" >/dev/null
cmake -S "$source_dir/examples" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib:$tmp/prefix/lib/x86_64-linux-gnu" "$tmp/consumer/dlock_example" "sqlite://$tmp/locks.db"
PKG_CONFIG_PATH=$(find "$tmp/prefix" -name pkgconfig -type d | head -1)
export PKG_CONFIG_PATH
g++ -std=c++20 "$source_dir/examples/basic.cpp" -o "$tmp/pc_example" $(pkg-config --cflags --libs dlock)
LD_LIBRARY_PATH=$(dirname "$(find "$tmp/prefix" -name 'libdlock.so' | head -1)") "$tmp/pc_example" "sqlite://$tmp/locks2.db"
test -x "$tmp/prefix/bin/dlock" || { echo "dlock CLI not installed"; exit 1; }
# The installed CLI must run as it is (no LD_LIBRARY_PATH).
env -u LD_LIBRARY_PATH "$tmp/prefix/bin/dlock" --version
echo "install: 1 passed, 0 failed"

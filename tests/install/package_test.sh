#!/usr/bin/env bash
# `make package`: builds the Debian packages with cpack, checks each one's contents and
# dependencies, unpacks them into a temporary root (dpkg -x) and runs the CLI from there
# against SQLite and a real redis-server; without libdlock-redis unpacked, the CLI says the
# backend is not installed (69).
set -euo pipefail
build_dir=$1
tmp=$(mktemp -d)
cleanup() {
  [[ -n ${redis_pid:-} ]] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
unset DLOCK_PLUGIN_PATH
(cd "$build_dir" && cpack -G DEB -B "$tmp/debs" >"$tmp/cpack.log" 2>&1) ||
  { tail -30 "$tmp/cpack.log"; exit 1; }
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build_dir/CPackConfig.cmake")
deb() { ls "$tmp/debs/$1"_*.deb; }
has() {  # has PACKAGE PATH-PATTERN
  dpkg-deb -c "$(deb "$1")" | awk '{print $6}' | grep -q "$2" || { echo "$1 lacks $2"; exit 1; }
}
has libdlock '/libdlock\.so\.0$'
has libdlock-dev 'include/dlock/dlock\.hpp$'
has libdlock-dev 'pkgconfig/dlock-redis\.pc$'
has dlock 'bin/dlock$'
for b in redis zookeeper postgres mysql etcd; do
  has "libdlock-$b" "/libdlock-$b\.so\.0$"
  has "libdlock-$b" "cmake/dlock/dlock-$b-targets\.cmake$"
  dpkg-deb -f "$(deb "libdlock-$b")" Depends | grep -q "libdlock (= $version)" ||
    { echo "libdlock-$b does not depend on libdlock (= $version)"; exit 1; }
done
has libdlock-prometheus '/libdlock-prometheus\.so\.0$'
has libdlock-prometheus 'cmake/dlock/dlock-prometheus-targets\.cmake$'
has libdlock-dev 'include/dlock/prometheus\.hpp$'
dpkg-deb -f "$(deb libdlock-prometheus)" Depends | grep -q "libdlock (= $version)" ||
  { echo "libdlock-prometheus does not depend on libdlock (= $version)"; exit 1; }
dpkg-deb -f "$(deb libdlock-prometheus)" Depends | grep -q libprometheus-cpp-core ||
  { echo "libdlock-prometheus lacks prometheus-cpp"; exit 1; }
# The core package needs no server client library (nor prometheus-cpp).
if dpkg-deb -f "$(deb libdlock)" Depends | grep -E 'libpq|libmariadb|libzookeeper|libhiredis|libgrpc|libprotobuf|prometheus'; then
  echo "libdlock depends on a server client library"; exit 1
fi
dpkg-deb -f "$(deb libdlock-redis)" Depends | grep -q libhiredis || { echo "libdlock-redis lacks hiredis"; exit 1; }

# The CLI from the unpacked root: libdlock found by its rpath, the plug-in next to libdlock.
for p in libdlock libdlock-dev dlock libdlock-redis; do dpkg -x "$(deb "$p")" "$tmp/root"; done
# One library directory (lib, or lib/<multiarch> when configured for /usr): the core looks for
# plug-ins in its own directory, so each package must put its library there, and the .pc
# files and the CMake package must name that directory too.
libdir=$(dirname "$(find "$tmp/root" -name libdlock.so.0)")
for f in libdlock-redis.so.0 pkgconfig/dlock.pc pkgconfig/dlock-redis.pc cmake/dlock/dlockConfig.cmake \
  cmake/dlock/dlock-redis-targets.cmake; do
  [[ -e $libdir/$f ]] || { echo "$f is not beside libdlock in ${libdir#"$tmp/root"}"; exit 1; }
done
for pc in dlock dlock-redis; do
  got=$(PKG_CONFIG_PATH=$libdir/pkgconfig pkg-config --variable=libdir "$pc")
  [[ $(realpath "$got") == "$(realpath "$libdir")" ]] ||
    { echo "$pc.pc: libdir $got, not ${libdir#"$tmp/root"}"; exit 1; }
done
# find_package(dlock COMPONENTS redis) from the unpacked files: CMake's generated files fail
# it if an imported library is not where they say.
mkdir "$tmp/find"
printf '%s\n' 'cmake_minimum_required(VERSION 3.20)' 'project(find_dlock CXX)' \
  'find_package(dlock REQUIRED COMPONENTS redis)' >"$tmp/find/CMakeLists.txt"
cmake -S "$tmp/find" -B "$tmp/find/build" -Ddlock_DIR="$libdir/cmake/dlock" >"$tmp/find.log" 2>&1 ||
  { echo "find_package(dlock COMPONENTS redis) from the packages failed:"; cat "$tmp/find.log"; exit 1; }
cli=$tmp/root/usr/bin/dlock
run() { set +e; env -u LD_LIBRARY_PATH "$cli" "$@"; code=$?; set -e; }
run status --url "sqlite://$tmp/locks.db" nightly
[[ $code == 1 ]] || { echo "unpacked dlock status on sqlite: exit $code, want 1 (free)"; exit 1; }
run run --url "sqlite://$tmp/locks.db" nightly -- true
[[ $code == 0 ]] || { echo "unpacked dlock run on sqlite: exit $code"; exit 1; }
# shellcheck source=start_redis.sh
source "$(dirname "$0")/start_redis.sh"
start_redis "$tmp/redis"
run run --url "$redis_url" nightly -- true
[[ $code == 0 ]] || { echo "unpacked dlock run on redis: exit $code"; exit 1; }
# Without the plug-in's package: not installed, 69.
find "$tmp/root" -name 'libdlock-redis.so*' -delete
run status --url "$redis_url" nightly 2>"$tmp/err"
[[ $code == 69 ]] && grep -q "the redis backend is not installed (libdlock-redis" "$tmp/err" ||
  { echo "unpacked dlock without libdlock-redis: exit $code"; cat "$tmp/err"; exit 1; }
echo "package: 1 passed, 0 failed"

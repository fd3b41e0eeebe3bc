# Sourced by consumer_test.sh after it installed dlock into $tmp/prefix ($libdir, $tmp,
# $source_dir and PKG_CONFIG_PATH set there): the backend plug-ins as an installed user sees them.

# (a) The embedded default costs no server client library: neither libdlock nor a program
# that uses it alone loads one.
clients='libpq|libmariadb|libzookeeper|libhiredis|libgrpc|libprotobuf|libprometheus'
for f in "$libdir/libdlock.so" "$tmp/consumer/dlock_example" "$tmp/prefix/bin/dlock"; do
  if LD_LIBRARY_PATH=$libdir ldd "$f" | grep -E "$clients"; then
    echo "$f loads a server client library (above)"; exit 1
  fi
done
for b in redis zookeeper postgres mysql etcd; do
  test -f "$libdir/libdlock-$b.so.0" || { echo "libdlock-$b.so.0 not installed in $libdir"; exit 1; }
done

# shellcheck source=start_redis.sh
source "$(dirname "${BASH_SOURCE[0]}")/start_redis.sh"
start_redis "$tmp/redis"

# (b) find_package(dlock COMPONENTS redis) and dlock::redis: builds, links the plug-in, and
# opens a redis:// session; the same through pkg-config's dlock-redis.
cmake -S "$source_dir/tests/install/redis_consumer" -B "$tmp/redis_consumer" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" -DDLOCK_EXAMPLE_SOURCE="$source_dir/examples/basic.cpp" >/dev/null
cmake --build "$tmp/redis_consumer" >/dev/null
LD_LIBRARY_PATH=$libdir "$tmp/redis_consumer/redis_consumer" "$redis_url"
g++ -std=c++20 "$source_dir/examples/basic.cpp" -o "$tmp/pc_redis" $(pkg-config --cflags --libs dlock-redis)
LD_LIBRARY_PATH=$libdir "$tmp/pc_redis" "$redis_url"
# Linked means linked: nothing in the program calls the plug-in, and the toolchain's default
# --as-needed would have dropped it (then only a plug-in next to libdlock would be found).
for f in "$tmp/redis_consumer/redis_consumer" "$tmp/pc_redis"; do
  readelf -d "$f" | grep -q 'NEEDED.*libdlock-redis' ||
    { echo "$f does not need libdlock-redis although it linked it:"; readelf -d "$f" | grep NEEDED; exit 1; }
done
# A component that does not exist is not found.
mkdir -p "$tmp/nosuch"
printf 'cmake_minimum_required(VERSION 3.25)\nproject(p LANGUAGES CXX)\nfind_package(dlock REQUIRED COMPONENTS nosuch)\n' \
  >"$tmp/nosuch/CMakeLists.txt"
if cmake -S "$tmp/nosuch" -B "$tmp/nosuch/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/nosuch.out" 2>&1; then
  echo "find_package(dlock COMPONENTS nosuch) must fail"; exit 1
fi
grep -q "component(s) nosuch not installed" "$tmp/nosuch.out" ||
  { echo "the missing component is not named:"; cat "$tmp/nosuch.out"; exit 1; }

# (b') The prometheus component: find_package(dlock COMPONENTS prometheus) and dlock-prometheus.pc
# each build a program whose exposition counts its one grant (libdlock itself links no
# prometheus-cpp: (a) above).
want='dlock_acquire_total{backend="sqlite",lock="nightly",result="granted"} 1'
cmake -S "$source_dir/tests/install/prometheus_consumer" -B "$tmp/prom_consumer" \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/prom_consumer" >/dev/null
g++ -std=c++20 "$source_dir/tests/install/prometheus_consumer/main.cpp" -o "$tmp/pc_prom" \
  $(pkg-config --cflags --libs dlock-prometheus)
for f in "$tmp/prom_consumer/prometheus_consumer" "$tmp/pc_prom"; do
  LD_LIBRARY_PATH=$libdir "$f" "sqlite://$tmp/prom.db" >"$tmp/prom.out"
  grep -qF "$want" "$tmp/prom.out" || { echo "$f: no '$want' in:"; cat "$tmp/prom.out"; exit 1; }
done

# The installed CLI (only libdlock linked) loads the plug-in next to libdlock by scheme...
set +e
env -u LD_LIBRARY_PATH "$tmp/prefix/bin/dlock" status --url "$redis_url" nightly
code=$?
set -e
[[ $code == 1 ]] || { echo "installed dlock status on redis://: exit $code, want 1 (free)"; exit 1; }
# (c) ...and, the plug-in removed, says it is not installed: exit 69 (EX_UNAVAILABLE).
rm "$libdir"/libdlock-redis.so*
set +e
env -u LD_LIBRARY_PATH "$tmp/prefix/bin/dlock" status --url "$redis_url" nightly 2>"$tmp/noplugin.err"
code=$?
set -e
[[ $code == 69 ]] || { echo "dlock without libdlock-redis: exit $code, want 69"; cat "$tmp/noplugin.err"; exit 1; }
grep -q "the redis backend is not installed (libdlock-redis" "$tmp/noplugin.err" ||
  { echo "no clear not-installed message:"; cat "$tmp/noplugin.err"; exit 1; }
# It names the library directory in normal form (not .../bin/../lib).
if grep -q '/\.\./' "$tmp/noplugin.err"; then
  echo "not-installed message names an unnormalised directory:"; cat "$tmp/noplugin.err"; exit 1
fi
# With DLOCK_PLUGIN_PATH set, the message says what it is instead of suggesting it.
set +e
env -u LD_LIBRARY_PATH DLOCK_PLUGIN_PATH="$tmp/nowhere" "$tmp/prefix/bin/dlock" status \
  --url "$redis_url" nightly 2>"$tmp/noplugin-env.err"
set -e
grep -q "DLOCK_PLUGIN_PATH is '$tmp/nowhere'" "$tmp/noplugin-env.err" ||
  { echo "DLOCK_PLUGIN_PATH not reported:"; cat "$tmp/noplugin-env.err"; exit 1; }
# SQLite still works without any plug-in.
env -u LD_LIBRARY_PATH "$tmp/prefix/bin/dlock" status --url "sqlite://$tmp/cli.db" nightly || [[ $? == 1 ]]

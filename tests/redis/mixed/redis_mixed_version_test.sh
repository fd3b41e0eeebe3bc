#!/usr/bin/env bash
# Mixed versions on one Redis server and one lock name (docs/redis.md, "Layout versions"): an
# older dlock and this one must exclude each other for mutex and shared locks, and an older
# mutex must wait behind this one's semaphore permits and election candidates.
#   tests/redis/mixed/redis_mixed_version_test.sh OLD_BUILD NEW_BUILD
# Each build dir must have built the targets dlock and dlock_cli (e.g. bench/ab's old tree:
# a clone of the older commit, configured as in bench/README.md). Not part of ctest: it needs
# the older tree.
set -euo pipefail
old_build=$(realpath "$1")
new_build=$(realpath "$2")
here=$(dirname "$(realpath "$0")")
tmp=$(mktemp -d)
redis_pid=
cleanup() {
  [[ -n $redis_pid ]] && kill "$redis_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

for v in old new; do
  b=${v}_build
  cmake --install "${!b}" --prefix "$tmp/$v" >/dev/null
  pc=$(find "$tmp/$v" -name pkgconfig -type d | head -1)
  PKG_CONFIG_PATH=$pc g++ -std=c++23 -O1 "$here/mixed_client.cpp" -o "$tmp/$v/client" \
    $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs dlock) -Wl,-rpath,"$(dirname "$(find "$tmp/$v" -name 'libdlock.so' | head -1)")"
done

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --dir "$tmp" --save '' --appendonly no --daemonize no \
  --maxmemory-policy noeviction >"$tmp/redis.log" 2>&1 &
redis_pid=$!
for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
url="redis://127.0.0.1:$port?ttl=5s"
passed=0

# $1's CLI runs "$3 ... NAME -- sleep 3" (run or elect) while $2's one try of the mutex NAME
# must be refused: 75 (held), or 64 where the older client reads the recipe from the entry id
# and refuses a mutex under a semaphore's or an election's name.
excludes() {
  local holder=$1 other=$2 cmd=$3 name=$4
  shift 4
  "$tmp/$holder/bin/dlock" "$cmd" --url "$url" "$@" "$name" -- sleep 3 &
  local pid=$!
  for _ in $(seq 200); do
    "$tmp/new/bin/dlock" status --url "$url" "$name" >/dev/null 2>&1 && break
    sleep 0.02
  done
  local rc=0
  "$tmp/$other/bin/dlock" run --url "$url" -n "$name" -- true || rc=$?
  wait "$pid"
  if [[ $rc != 75 && ! ($rc == 64 && $name != job) ]]; then
    echo "FAIL: $other's one try beside $holder's $cmd $* $name exited $rc"
    exit 1
  fi
  passed=$((passed + 1))
}
excludes old new run job
excludes new old run job
excludes new old run sem --permits 2  # an older mutex sees a permit as an exclusive entry
excludes new old elect vote           # ... and a candidate as one

# Writers and readers of both versions on one name, contended: no overlap.
occupancy=$tmp/occupancy
pids=()
for v in old new; do
  for mode in x s; do
    "$tmp/$v/client" "$url" rw "$mode" 150 "$occupancy" &
    pids+=($!)
  done
done
for p in "${pids[@]}"; do
  if ! wait "$p"; then
    echo "FAIL: a mixed client failed (see its message above)"
    exit 1
  fi
  passed=$((passed + 1))
done
echo "redis mixed versions: $passed passed, 0 failed"

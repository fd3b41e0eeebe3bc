#!/usr/bin/env bash
# Builds the libFuzzer targets with clang 16 (ASan+UBSan) and runs each briefly
# (FUZZ_SECONDS, default 8). Inputs in regressions/<target>/ are replayed first: a crash
# once found is kept there as a regression test. Seeds come from corpus/<target>/.
# Targets: url, name (lock-name validation), duration; and each backend's reply parsing:
# redis_reply (RESP bytes -> hiredis's reader -> parse_queue_reply -> Redlock merge_views),
# zk_children (child names + czxid/ctime -> queue), pg_rows (a libpq PGresult -> queue),
# mysql_rows (libmariadb's fetched cells -> queue), sqlite_rows (any typed values in the
# shared database file -> queue rows -> entries).
#
# Why the __cpp_concepts define: Debian 12's libstdc++ 12 hides std::expected unless
# __cpp_concepts >= 202002L; clang 16 implements what it needs but reports 201907L.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$(mktemp -d)}
seconds=${FUZZ_SECONDS:-8}
mkdir -p "$out"
CXX=${FUZZ_CXX:-clang++-16}
flags=(-std=c++2b -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -Wno-macro-redefined -Wno-builtin-macro-redefined -U__cpp_concepts -D__cpp_concepts=202002L
       -I"$src/include" -I"$src/src")
core=("$src/src/core/url.cpp" "$src/src/core/duration.cpp" "$src/src/core/names.cpp" "$src/src/core/errors.cpp")
b="$src/src/backends"
# Per target: the sources and client libraries it needs beyond its own file and core. The
# *_reply / *_rows / *_children targets feed each backend's reply parsing what a server
# (or, for SQLite, the shared database file) may send back.
declare -A extra=(
  [url]="" [name]="" [duration]=""
  [redis_reply]="$b/redis/redis_scripts.cpp $b/redis/redis_conn.cpp $b/redis/redis_dial.cpp $b/redis/redis_merge.cpp
                 $src/src/core/verdict.cpp $(pkg-config --cflags --libs hiredis)"
  [zk_children]="$b/zookeeper/zk_names.cpp $b/zookeeper/zk_queue.cpp $b/zookeeper/zk_value.cpp
                 $src/src/core/verdict.cpp"
  [pg_rows]="$b/postgres/pg_conn.cpp $(pkg-config --cflags --libs libpq)"
  [mysql_rows]="$b/mysql/my_conn.cpp $(pkg-config --cflags --libs libmariadb)"
  [sqlite_rows]="$b/sqlite/sqlite_rows.cpp $b/sqlite/sqlite_db.cpp $(pkg-config --cflags --libs sqlite3)"
)
targets=(url name duration redis_reply zk_children pg_rows mysql_rows sqlite_rows)
# Compiling dominates the run (each target is a full ASan build): as many at once as there
# are CPUs. A target that fails to compile is reported below as failed.
build() {
  # shellcheck disable=SC2086 # extra[] is a word list on purpose
  "$CXX" "${flags[@]}" "$src/tests/fuzz/$1_fuzz.cpp" "${core[@]}" ${extra[$1]} -o "$out/$1_fuzz"
}
max_jobs=$(nproc)
for target in "${targets[@]}"; do
  rm -f "$out/${target}_fuzz"
  build "$target" >"$out/${target}.build.log" 2>&1 &
  while (($(jobs -rp | wc -l) >= max_jobs)); do wait -n || true; done
done
wait || true
failed=0
passed=0
for target in "${targets[@]}"; do
  if [[ ! -x $out/${target}_fuzz ]]; then
    echo "$target: does not compile"
    tail -20 "$out/${target}.build.log"
    failed=$((failed + 1))
    continue
  fi
  work=$(mktemp -d)
  cp -r "$src/tests/fuzz/corpus/$target/." "$work/" 2>/dev/null || true
  regressions="$src/tests/fuzz/regressions/$target"
  if [[ -d $regressions ]] && compgen -G "$regressions/*" >/dev/null; then
    "$out/${target}_fuzz" "$regressions"/* >/dev/null 2>&1 || { echo "$target: a regression input crashes"; failed=$((failed + 1)); continue; }
  fi
  if "$out/${target}_fuzz" -max_total_time="$seconds" -max_len=512 -artifact_prefix="$out/${target}-" "$work" \
      >"$out/${target}.log" 2>&1; then
    echo "$target: $(grep -o 'Done [0-9]* runs' "$out/${target}.log" | tail -1), no crash"
    passed=$((passed + 1))
  else
    echo "$target: CRASH (see $out/${target}.log; input saved as $out/${target}-crash-*)"
    tail -20 "$out/${target}.log"
    failed=$((failed + 1))
  fi
  rm -rf "$work"
done
echo "fuzz: $passed passed, $failed failed"
((failed == 0))

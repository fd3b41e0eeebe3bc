#!/usr/bin/env bash
# Builds the libFuzzer targets with clang 16 (ASan+UBSan) and runs each briefly
# (FUZZ_SECONDS, default 5), as many at once as there are CPUs. Inputs in regressions/<target>/ are replayed first: a crash
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
seconds=${FUZZ_SECONDS:-5}
mkdir -p "$out"
CXX=${FUZZ_CXX:-clang++-16}
# Every object gets coverage (fuzzer-no-link); only the link adds libFuzzer's main.
cflags=(-std=c++2b -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
        -Wno-macro-redefined -Wno-builtin-macro-redefined -U__cpp_concepts -D__cpp_concepts=202002L
        -I"$src/include" -I"$src/src")
read -ra pkg_cflags <<<"$(pkg-config --cflags hiredis libpq libmariadb sqlite3)"
cflags+=("${pkg_cflags[@]}")
ldflags=(-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all)
core=("$src/src/core/url.cpp" "$src/src/core/duration.cpp" "$src/src/core/names.cpp" "$src/src/core/errors.cpp")
b="$src/src/backends"
# Per target: the sources it needs beyond its own file and core, and its client library. The
# *_reply / *_rows / *_children targets feed each backend's reply parsing what a server
# (or, for SQLite, the shared database file) may send back.
declare -A extra=(
  [url]="" [name]="" [duration]=""
  [redis_reply]="$b/redis/redis_scripts.cpp $b/redis/redis_queue_reply.cpp $b/redis/redis_conn.cpp $b/redis/redis_dial.cpp $b/redis/redis_merge.cpp
                 $src/src/core/verdict.cpp"
  [zk_children]="$b/zookeeper/zk_names.cpp $b/zookeeper/zk_queue.cpp $b/zookeeper/zk_value.cpp
                 $src/src/core/verdict.cpp"
  [pg_rows]="$b/postgres/pg_conn.cpp"
  [mysql_rows]="$b/mysql/my_conn.cpp"
  [sqlite_rows]="$b/sqlite/sqlite_rows.cpp $b/sqlite/sqlite_db.cpp"
)
declare -A libs=(
  [redis_reply]="$(pkg-config --libs hiredis)" [pg_rows]="$(pkg-config --libs libpq)"
  [mysql_rows]="$(pkg-config --libs libmariadb)" [sqlite_rows]="$(pkg-config --libs sqlite3)"
)
targets=(url name duration redis_reply zk_children pg_rows mysql_rows sqlite_rows)
sources_of() {
  # shellcheck disable=SC2086 # extra[] is a word list on purpose
  echo "$src/tests/fuzz/$1_fuzz.cpp" "${core[@]}" ${extra[$1]}
}
object_of() { local rel=${1#"$src"/}; echo "$out/obj/${rel//\//_}.o"; }
# Compiling dominates the run (each file is an ASan build): each source once, shared by the
# targets that use it, as many at once as there are CPUs; then one link per target. A target
# whose sources or link fail is reported below as not compiling.
mkdir -p "$out/obj"
declare -A seen=()
max_jobs=$(nproc)
for target in "${targets[@]}"; do
  for f in $(sources_of "$target"); do
    [[ -n ${seen[$f]:-} ]] && continue
    seen[$f]=1
    o=$(object_of "$f")
    rm -f "$o"
    "$CXX" "${cflags[@]}" -c "$f" -o "$o" >"$o.log" 2>&1 &
    while (($(jobs -rp | wc -l) >= max_jobs)); do wait -n || true; done
  done
done
wait || true
for target in "${targets[@]}"; do
  rm -f "$out/${target}_fuzz"
  objects=()
  for f in $(sources_of "$target"); do objects+=("$(object_of "$f")"); done
  {
    for o in "${objects[@]}"; do [[ -f $o ]] || cat "$o.log"; done
    # shellcheck disable=SC2086 # libs[] is a word list on purpose
    "$CXX" "${ldflags[@]}" "${objects[@]}" ${libs[$target]:-} -o "$out/${target}_fuzz"
  } >"$out/${target}.build.log" 2>&1 &
  while (($(jobs -rp | wc -l) >= max_jobs)); do wait -n || true; done
done
wait || true
# Each target runs on one processor for $seconds: as many at once as there are CPUs (the test
# holds both of CI's processors anyway). A target's verdict goes to its .result file, read in
# order below.
fuzz_one() {
  local target=$1 work regressions
  if [[ ! -x $out/${target}_fuzz ]]; then
    echo "$target: does not compile"
    tail -20 "$out/${target}.build.log"
    return 1
  fi
  work=$(mktemp -d)
  cp -r "$src/tests/fuzz/corpus/$target/." "$work/" 2>/dev/null || true
  regressions="$src/tests/fuzz/regressions/$target"
  if [[ -d $regressions ]] && compgen -G "$regressions/*" >/dev/null; then
    "$out/${target}_fuzz" "$regressions"/* >/dev/null 2>&1 || { echo "$target: a regression input crashes"; rm -rf "$work"; return 1; }
  fi
  local rc=0
  if "$out/${target}_fuzz" -max_total_time="$seconds" -max_len=512 -artifact_prefix="$out/${target}-" "$work" \
      >"$out/${target}.log" 2>&1; then
    echo "$target: $(grep -o 'Done [0-9]* runs' "$out/${target}.log" | tail -1), no crash"
  else
    echo "$target: CRASH (see $out/${target}.log; input saved as $out/${target}-crash-*)"
    tail -20 "$out/${target}.log"
    rc=1
  fi
  rm -rf "$work"
  return $rc
}
for target in "${targets[@]}"; do
  rm -f "$out/${target}.result"
  { fuzz_one "$target" >"$out/${target}.out" 2>&1 && echo ok || echo failed; } >"$out/${target}.result" &
  while (($(jobs -rp | wc -l) >= max_jobs)); do wait -n || true; done
done
wait || true
failed=0
passed=0
for target in "${targets[@]}"; do
  cat "$out/${target}.out"
  if [[ $(cat "$out/${target}.result") == ok ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
((failed == 0))

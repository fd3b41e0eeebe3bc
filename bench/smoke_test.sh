#!/usr/bin/env bash
# Smoke test (ctest label bench;nosan): every micro-benchmark runs once, briefly, and
# dlock-bench runs each scenario for a moment on memory:// and sqlite. Nothing is timed or
# compared: it only proves the benchmarks still run and print what bench/compare reads.
set -euo pipefail
micro=$1 tool=$2
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT

"$micro" --benchmark_min_time=0.001 >"$dir/micro.txt"
grep -q BM_decide_shared "$dir/micro.txt"

check() {  # check KEY ARGS...: the JSON has a numeric KEY
  local key=$1; shift
  out=$(timeout 120 "$tool" bench --json "$@")
  echo "$out"
  [[ $out == *"\"$key\":"[0-9]* ]] || { echo "no numeric $key in: $out" >&2; exit 1; }
}
for url in memory://smoke "sqlite://$dir/locks.db"; do
  check ops_per_s --url "$url" --duration 1s --count 2000
  check handoffs_per_s --url "$url" --scenario contended --clients 3 --duration 1s
  check grants --url "$url" --scenario waiters --waiters 20 --duration 1s
  check client_bytes_per_lock --url "$url" --scenario many-locks --count 200 --duration 5s
done

# An unknown scheme is a usage error (64), which bench/compare reports as "not yet implemented".
rc=0; "$tool" bench --url nosuchscheme://x --duration 1s 2>/dev/null || rc=$?
[[ $rc == 64 ]] || { echo "unknown scheme: exit $rc, want 64" >&2; exit 1; }
echo "bench smoke: ok"

#!/usr/bin/env bash
# Builds the libFuzzer targets with clang 16 (ASan+UBSan) and runs each briefly
# (FUZZ_SECONDS, default 15). Inputs in regressions/<target>/ are replayed first: a crash
# once found is kept there as a regression test. Seeds come from corpus/<target>/.
#
# Why the __cpp_concepts define: Debian 12's libstdc++ 12 hides std::expected unless
# __cpp_concepts >= 202002L; clang 16 implements what it needs but reports 201907L.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$(mktemp -d)}
seconds=${FUZZ_SECONDS:-15}
mkdir -p "$out"
CXX=${FUZZ_CXX:-clang++-16}
flags=(-std=c++2b -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -Wno-macro-redefined -Wno-builtin-macro-redefined -U__cpp_concepts -D__cpp_concepts=202002L
       -I"$src/include" -I"$src/src")
core=("$src/src/core/url.cpp" "$src/src/core/duration.cpp" "$src/src/core/names.cpp" "$src/src/core/errors.cpp")
failed=0
passed=0
for target in url name duration; do
  "$CXX" "${flags[@]}" "$src/tests/fuzz/${target}_fuzz.cpp" "${core[@]}" -o "$out/${target}_fuzz"
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

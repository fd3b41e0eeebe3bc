#!/usr/bin/env bash
# Prints, after a failed ctest run, why each failed test failed: first a few dozen lines each,
# then a short summary of a few lines each. A CI page that shows only a log's head and tail
# can cut the one failure out of a long suite's output, so the summary goes last.
# Usage: scripts/test-failures.sh BUILD_DIR
set -u
log="${1:?build directory}/Testing/Temporary/LastTest.log"
[ -f "$log" ] || exit 0
echo
echo "==== why the failed tests failed (from $log) ===="
# For a failed GoogleTest binary: each failed case from its '[ RUN ]' line, at most 40 lines,
# and in the summary its name and the first lines of its first failure.
# For any other failed test (a script): its last 30 lines, and in the summary its lines that
# say FAIL (the fault run's failed rows and their reasons).
awk '
  function keep(s) { if (nshort < 60) short[nshort++] = s }
  /^[0-9]+\/[0-9]+ Testing: / { test = $3; m = 0; delete all; cases = 0; next }
  { all[m++] = $0 }
  /^\[ RUN      \]/ { n = 0; delete buf }
  { if (n < 40) buf[n++] = $0 }
  /^\[  FAILED  \] [^ ]+(, where GetParam\(\) = .*)? \([0-9]+ ms\)$/ {
    print "---- " test; for (i = 0; i < n; i++) print buf[i]
    name = $4; sub(/,$/, "", name); keep("FAILED " test ": " name)
    shown = 0; for (i = 0; i < n && shown < 4; i++) {
      if (shown > 0 || buf[i] ~ /: Failure$/) { keep("    " buf[i]); shown++ }
    }
    n = 0; delete buf; cases++
  }
  /^Test (Failed|Not Run)/ {
    if (cases == 0) {
      print "---- " test " (last lines)"
      for (i = (m > 34 ? m - 34 : 0); i < m; i++) print all[i]
      keep("FAILED " test ":")
      shown = 0; w = 0; for (i = 0; i < m && shown < 12; i++) {
        if (all[i] ~ / FAIL$/ || all[i] ~ /^why FAIL/) { keep("    " all[i]); shown++; w = (all[i] ~ /^why/) ? 3 : 0; continue }
        if (w > 0 && all[i] ~ /^  /) { keep("    " all[i]); shown++; w--; continue }
        w = 0
      }
      if (shown == 0) for (i = (m > 4 ? m - 4 : 0); i < m; i++) keep("    " all[i])
    }
    print "==== " test ": " $0
  }
  END {
    if (nshort == 0) exit
    print ""
    print "==== in short ===="
    for (i = 0; i < nshort; i++) print short[i]
  }
' "$log"
exit 0

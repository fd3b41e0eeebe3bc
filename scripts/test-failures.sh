#!/usr/bin/env bash
# Prints, after a failed ctest run, why each failed test failed, in a few lines each.
# ctest --output-on-failure prints whole test logs, and a CI page that shows only a log's
# head and tail can cut the one failure out of a long suite's output; this goes last.
# Usage: scripts/test-failures.sh BUILD_DIR
set -u
log="${1:?build directory}/Testing/Temporary/LastTest.log"
[ -f "$log" ] || exit 0
echo
echo "==== why the failed tests failed (from $log) ===="
# For a failed GoogleTest binary: each failed case from its '[ RUN ]' line, at most 40 lines.
# For any other failed test (a script): its last 30 lines.
awk '
  /^[0-9]+\/[0-9]+ Testing: / { test = $3; m = 0; delete all; cases = 0; next }
  { all[m++] = $0 }
  /^\[ RUN      \]/ { n = 0; delete buf }
  { if (n < 40) buf[n++] = $0 }
  /^\[  FAILED  \] [^ ]+ \([0-9]+ ms\)$/ {
    print "---- " test; for (i = 0; i < n; i++) print buf[i]; n = 0; delete buf; cases++
  }
  /^Test (Failed|Not Run)/ {
    if (cases == 0) {
      print "---- " test " (last lines)"
      for (i = (m > 34 ? m - 34 : 0); i < m; i++) print all[i]
    }
    print "==== " test ": " $0
  }
' "$log"
exit 0

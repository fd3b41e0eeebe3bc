#!/usr/bin/env bash
# Installs dlock into a temporary prefix and builds examples/ against it twice: through
# find_package(dlock) and through pkg-config. Then runs the example on a temporary database.
# Then the backend plug-ins (plugins_test.sh): a SQLite-only program links no server client
# library; a find_package(dlock COMPONENTS redis) consumer opens a redis:// session; the
# installed CLI without the plug-in says it is not installed (exit 69).
set -euo pipefail
build_dir=$1
source_dir=$2
tmp=$(mktemp -d)
cleanup() {
  [[ -n ${redis_pid:-} ]] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
# A plug-in left in $DLOCK_PLUGIN_PATH by the caller must not stand in for the installed ones.
unset DLOCK_PLUGIN_PATH
cmake --install "$build_dir" --prefix "$tmp/prefix" >/dev/null
cmake -S "$source_dir/examples" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib:$tmp/prefix/lib/x86_64-linux-gnu" "$tmp/consumer/dlock_example" "sqlite://$tmp/locks.db"
PKG_CONFIG_PATH=$(find "$tmp/prefix" -name pkgconfig -type d | head -1)
export PKG_CONFIG_PATH
libdir=$(dirname "$(find "$tmp/prefix" -name 'libdlock.so' | head -1)")
# The pkg-config flags must not pin a language standard: C++20 and C++23 programs both build
# as what they asked for.
for std in c++20 c++23; do
  g++ -std=$std "$source_dir/examples/basic.cpp" -o "$tmp/pc_example_$std" $(pkg-config --cflags --libs dlock)
  LD_LIBRARY_PATH=$libdir "$tmp/pc_example_$std" "sqlite://$tmp/locks-$std.db"
done
if pkg-config --cflags dlock | grep -q -- '-std='; then
  echo "dlock.pc pins a language standard: $(pkg-config --cflags dlock)"; exit 1
fi
# Below C++20 the headers say so in one line instead of a page of template errors.
if g++ -std=c++17 -fsyntax-only "$source_dir/examples/basic.cpp" $(pkg-config --cflags dlock) 2>"$tmp/cxx17.err"; then
  echo "a C++17 build of a dlock program must fail"; exit 1
fi
grep -q "dlock needs C++20 or later" "$tmp/cxx17.err" || { echo "no clear C++17 error:"; head -5 "$tmp/cxx17.err"; exit 1; }
test -x "$tmp/prefix/bin/dlock" || { echo "dlock CLI not installed"; exit 1; }
# The installed CLI must run as it is (no LD_LIBRARY_PATH).
env -u LD_LIBRARY_PATH "$tmp/prefix/bin/dlock" --version
# The man page renders without warnings; the bash completion loads and completes.
man_page="$tmp/prefix/share/man/man1/dlock.1"
test -f "$man_page" || { echo "man page not installed"; exit 1; }
if command -v groff >/dev/null; then
  warnings=$(groff -man -Tutf8 -ww -z "$man_page" 2>&1)
  [[ -z $warnings ]] || { echo "man page warnings: $warnings"; exit 1; }
fi
completion="$tmp/prefix/share/bash-completion/completions/dlock"
test -f "$completion" || { echo "bash completion not installed"; exit 1; }
got=$(bash -c 'source "$1"; COMP_WORDS=(dlock ru); COMP_CWORD=1; _dlock; echo "${COMPREPLY[*]}"' _ "$completion")
[[ $got == run ]] || { echo "bash completion of 'dlock ru' gave '$got'"; exit 1; }
# shellcheck source=plugins_test.sh
source "$(dirname "$0")/plugins_test.sh"
echo "install: 2 passed, 0 failed"

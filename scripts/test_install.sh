#!/usr/bin/env bash
# The standard CMake workflow and the installed package, end to end:
#  1. configures and builds everything (library, command line, tests) with CMake's
#     default generator, Unix Makefiles, in build-make/ (ccache makes it cheap after
#     scripts/build.sh has built the same sources with Ninja);
#  2. `cmake --install` into a temporary prefix and checks what it holds;
#  3. configures, builds and runs examples/custom_training_loop (a copy outside the
#     repository) against that prefix alone: it trains a linear model with AdamW and
#     fails unless the loss falls and the training step compiles once. Where mount
#     namespaces are allowed (root), step 3 runs with the repository hidden.
# Usage: bash scripts/test_install.sh   (scripts/test.sh runs it after ctest)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
repo=$(pwd)
build=$repo/build-make
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_install: FAIL: $*" >&2; exit 1; }
start=$SECONDS

echo "test_install: configure and build with the default generator (Unix Makefiles) in build-make/"
cmake -S . -B "$build" -G "Unix Makefiles" -DCMAKE_BUILD_TYPE=Release -DLAZYTRAIN_WERROR=ON > "$tmp/configure.log" ||
  { cat "$tmp/configure.log"; fail "configure"; }
cmake --build "$build" -j "$(nproc)" > "$tmp/build.log" 2>&1 || { tail -50 "$tmp/build.log"; fail "build"; }
echo "test_install: built in $((SECONDS - start)) s"

prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "install"; }
for f in bin/lazytrain lib/liblazytrain.a lib/liblazytrain_omp_defaults.so include/lazytrain/tensor/ops.h include/lazytrain/lazy/graph_executor.h \
         lib/cmake/lazytrain/lazytrainConfig.cmake lib/cmake/lazytrain/lazytrainConfigVersion.cmake \
         lib/cmake/lazytrain/lazytrainTargets.cmake; do
  [ -e "$prefix/$f" ] || fail "the install lacks $f"
done
[ "$(ls "$prefix/bin")" = lazytrain ] || fail "bin/ holds more than lazytrain: $(ls "$prefix/bin" | tr '\n' ' ')"
if grep -rl -e "$repo" "$prefix/lib/cmake" "$prefix/include"; then fail "installed files name the source or build tree"; fi
"$prefix/bin/lazytrain" --help > /dev/null || fail "the installed lazytrain does not run"
# Its spinning is bounded: liblazytrain_omp_defaults.so (found through its RUNPATH) ran before libgomp.
spin=$(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OMP_DISPLAY_ENV=verbose "$prefix/bin/lazytrain" --help 2>&1 | sed -n "s/^ *GOMP_SPINCOUNT = '\([0-9]*\)'/\1/p")
[ "$spin" = 30000 ] || fail "the installed lazytrain's OpenMP spin count is libgomp's (GOMP_SPINCOUNT '$spin', expected '30000')"

# The example, as a user would build it: its own folder, the prefix, nothing else.
cp -r examples/custom_training_loop "$tmp/example"
cat > "$tmp/example.sh" <<SCRIPT
set -euo pipefail
cd "$tmp"
cmake -S example -B example-build -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" > example-configure.log ||
  { cat example-configure.log; exit 1; }
grep -qx "lazytrain_DIR:PATH=$prefix/lib/cmake/lazytrain" example-build/CMakeCache.txt ||
  { echo "find_package(lazytrain) did not use the prefix"; exit 1; }
cmake --build example-build > example-build.log 2>&1 || { cat example-build.log; exit 1; }
./example-build/custom_training_loop
SCRIPT
hide="mount -t tmpfs none '$repo' && [ ! -e '$repo/CMakeLists.txt' ]"
if [ "$(id -u)" = 0 ] && unshare -m bash -c "$hide" 2> /dev/null; then
  echo "test_install: example against the prefix, repository hidden ($repo is an empty tmpfs)"
  unshare -m bash -c "$hide && bash '$tmp/example.sh'" || fail "the example"
else
  echo "test_install: example against the prefix (no mount namespace here: repository not hidden)"
  bash "$tmp/example.sh" || fail "the example"
fi
echo "test_install: OK ($((SECONDS - start)) s)"

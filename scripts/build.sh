#!/usr/bin/env bash
# Configures and builds lazytrain into build/ (incremental; ccache when present).
# Warnings are errors in every build, so the main job, the test suite and the
# benchmarks share one configuration of build/ and never rebuild each other's work.
# Usage: bash scripts/build.sh [--target NAME]... [extra cmake -D options]
#   --target NAME   build only NAME (repeatable; e.g. the main job builds only `lazytrain`); default: everything
set -euo pipefail
cd "$(dirname "$0")/.."
targets=()
while [ $# -ge 2 ] && [ "$1" = --target ]; do
  targets+=(--target "$2")
  shift 2
done
bash scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAZYTRAIN_WERROR=ON "$@" > /dev/null
cmake --build build -j "$(nproc)" "${targets[@]}"

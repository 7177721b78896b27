#!/usr/bin/env bash
# Configures and builds lazytrain into build/ (incremental; ccache when present).
# Warnings are errors in every build, so the main job, the test suite and the
# benchmarks share one configuration of build/ and never rebuild each other's work.
# Usage: bash scripts/build.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DLAZYTRAIN_WERROR=ON "$@" > /dev/null
cmake --build build -j "$(nproc)"

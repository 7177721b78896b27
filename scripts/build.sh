#!/usr/bin/env bash
# Configures and builds lazytrain into build/ (incremental; ccache when present).
# Usage: bash scripts/build.sh [extra cmake -D options]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" > /dev/null
cmake --build build -j "$(nproc)"

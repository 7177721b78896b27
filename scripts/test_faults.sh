#!/usr/bin/env bash
# The fault suite of issue 53: ../shared/bugs/turn4 holds one script per case a
# PyTorch user hits (each compares lazytrain with torch on the same inputs and
# prints "fNN name: PASS|FAIL ..."). Runs it with the venv scripts/test_python.sh
# made (the wheel and torch installed) and fails unless every case passes.
# Usage: bash scripts/test_faults.sh   (scripts/test.sh runs it after test_python.sh)
# LAZYTRAIN_FAULT_SUITE names another folder of cases; LAZYTRAIN_DATA_DIR the shared data.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
suite=${LAZYTRAIN_FAULT_SUITE:-$repo/../shared/bugs/turn4}
python=$repo/build/venv-test/bin/python
if [ ! -f "$suite/run_all.sh" ]; then
  echo "test_faults: skipped: no fault suite at $suite (set LAZYTRAIN_FAULT_SUITE)"
  exit 0
fi
[ -x "$python" ] || { echo "test_faults: FAIL: run scripts/test_python.sh first (no $python)" >&2; exit 1; }
if ! "$python" -c "import torch, lazytrain" 2> /dev/null; then
  echo "test_faults: FAIL: torch or lazytrain does not import in build/venv-test (python/requirements-interop.txt)" >&2
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A copy: run_all.sh writes results.txt beside its scripts, and shared/ is read-only.
cp -r "$suite" "$tmp/suite"
start=$SECONDS
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
PY=$python LT_DATA=${LAZYTRAIN_DATA_DIR:-$repo/../shared/data} bash "$tmp/suite/run_all.sh" > "$tmp/out"
total=$(grep -c . "$tmp/out" || true)
passed=$(grep -cE '^f[0-9]+ [a-z0-9_]+: PASS' "$tmp/out" || true)
grep -vE '^f[0-9]+ [a-z0-9_]+: PASS' "$tmp/out" || true
echo "test_faults: $suite in $((SECONDS - start)) s"
echo "test_faults: $passed passed, $((total - passed)) failed"
[ "$total" -gt 0 ] && [ "$passed" = "$total" ] || { echo "test_faults: FAIL: cases above do not pass" >&2; exit 1; }

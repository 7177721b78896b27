#!/usr/bin/env bash
# Builds the documentation site (scripts/build_docs.sh, warnings as errors;
# LAZYTRAIN_TEST_DOCS=0 skips it), installs dependencies, builds with warnings as errors and runs the test suite,
# then the Python package's tests (scripts/test_python.sh), the fault suite (scripts/test_faults.sh), then the install check (scripts/test_install.sh: default generator, cmake --install,
# the example against the installed package; LAZYTRAIN_TEST_INSTALL=0 skips it).
# Usage: bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${LAZYTRAIN_TEST_DOCS:-1}" != 0 ]; then
  bash scripts/build_docs.sh
fi
bash scripts/build.sh
(
  cd build
  # One OpenMP thread per test process: ctest already runs tests in parallel.
  export OMP_NUM_THREADS=1
  ctest --output-on-failure -j "$(nproc)" --timeout 600
)
# The Python package: pip wheel/install in a venv, the wheel alone, pytest (scripts/test_python.sh).
bash scripts/test_python.sh
# The fault suite of ../shared/bugs/turn4 (torch's semantics), with that venv.
bash scripts/test_faults.sh
if [ "${LAZYTRAIN_TEST_INSTALL:-1}" != 0 ]; then
  bash scripts/test_install.sh
fi

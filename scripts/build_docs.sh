#!/usr/bin/env bash
# Builds the documentation site into build/docs/html with warnings as errors.
# Installs its pinned tools (docs/requirements.txt) into build/venv-docs; needs
# neither the native core nor torch (the API pages read the Python sources and
# stubs statically). Usage: bash scripts/build_docs.sh [extra sphinx-build flags]
set -euo pipefail
cd "$(dirname "$0")/.."
# One build at a time: autoapi writes its pages into docs/reference/api while it runs.
mkdir -p build/docs
exec 9> build/docs/.lock
flock 9
PYTHON="${LAZYTRAIN_PYTHON:-python3}"
VENV=build/venv-docs
if [ ! -x "$VENV/bin/sphinx-build" ] || ! cmp -s docs/requirements.txt "$VENV/requirements.txt"; then
  "$PYTHON" -m venv "$VENV"
  echo "build_docs: installing docs/requirements.txt into $VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check -r docs/requirements.txt > build/docs/pip.log 2>&1 ||
    { grep -v "^WARNING: Location" build/docs/pip.log | tail -20; echo "build_docs: FAIL: pip install -r docs/requirements.txt" >&2; exit 1; }
  cp docs/requirements.txt "$VENV/requirements.txt"
fi
# -W: warnings are errors; -n: every cross-reference must resolve; --keep-going: list them all;
# -E: every page read afresh (an incremental build would not repeat an unchanged page's warnings).
"$VENV/bin/sphinx-build" -b html -E -W -n --keep-going -q docs build/docs/html "$@"
echo "docs: build/docs/html/index.html"

#!/usr/bin/env bash
# The Python package, as a user installs it, and its tests:
#  1. a venv (build/venv-test) with the pinned test requirements (numpy, pytest) and,
#     where they install, the interop peers (python/requirements-interop.txt);
#  2. `pip wheel .` (pip's isolated build: scikit-build-core and nanobind from
#     PyPI, pinned in pyproject.toml; warnings are errors here, and the compiler
#     cache serves the objects scripts/build.sh compiled), then the wheel
#     installed into that venv;
#  3. the wheel in a second, fresh venv outside the repository, run with the
#     repository hidden where mount namespaces allow (root): import, a training
#     step, the `lazytrain` console command;
#  4. pytest tests/python, the grids against torch on the interpreter backend (the equivalence tests use build/python_equivalence_reference,
#     which scripts/build.sh builds; the tokenizer tests read LAZYTRAIN_DATA_DIR).
# Usage: bash scripts/test_python.sh   (scripts/test.sh runs it after ctest)
# LAZYTRAIN_PYTHON picks the interpreter (default: python3 on PATH, 3.9 or newer).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
python=${LAZYTRAIN_PYTHON:-python3}
venv=$repo/build/venv-test
dist=$repo/build/dist
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_python: FAIL: $*" >&2; exit 1; }
start=$SECONDS

"$python" -c 'import sys; sys.exit(sys.version_info < (3, 9))' || fail "$python is older than Python 3.9"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r python/requirements-test.txt
# The real clients of what lazytrain writes and the references its tests compare
# with (torch 2.13's CPU wheel, transformers, datasets, tensorboard: pinned in
# python/requirements-interop.txt). Their tests skip, with the reason, when
# these cannot install here; LAZYTRAIN_TEST_INTEROP=0 leaves them out.
if [ "${LAZYTRAIN_TEST_INTEROP:-1}" != 0 ]; then
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check -r python/requirements-interop.txt > "$tmp/interop.log" 2>&1; then
    echo "test_python: python/requirements-interop.txt did not install; the tests that need torch, transformers, datasets or"
    echo "test_python: tensorboard will skip. pip said:"
    grep -v "^WARNING: Location" "$tmp/interop.log" | tail -5
  fi
fi

echo "test_python: pip wheel . (isolated build)"
rm -rf "$dist"
# The compiler build/ uses, by the same name: ccache keys on it, so the wheel's
# library objects are cache hits after scripts/build.sh.
settings=(--config-settings=cmake.define.LAZYTRAIN_WERROR=ON)
compiler=$(sed -n 's/^CMAKE_CXX_COMPILER:FILEPATH=//p' build/CMakeCache.txt 2> /dev/null || true)
[ -n "$compiler" ] && settings+=("--config-settings=cmake.define.CMAKE_CXX_COMPILER=$compiler")
"$venv/bin/python" -m pip wheel -q --disable-pip-version-check --no-deps . -w "$dist" "${settings[@]}" \
  > "$tmp/wheel.log" 2>&1 || { tail -60 "$tmp/wheel.log"; fail "pip wheel"; }
wheel=$(ls "$dist"/lazytrain-*.whl)
echo "test_python: built $(basename "$wheel") in $((SECONDS - start)) s"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
# The installed wheel's torch_dynamo_backends entry point: backend="lazytrain"
# without importing lazytrain (where torch installed, from the interop peers).
if "$venv/bin/python" -c "import torch" 2> /dev/null; then
  (cd "$tmp" && "$venv/bin/python" - <<'PY') || fail "torch.compile(backend='lazytrain') from the installed wheel"
import sys, torch
f = torch.compile(lambda x: torch.sin(x) * 2 + 1, backend="lazytrain", dynamic=False)
x = torch.arange(6.0)
torch.testing.assert_close(f(x), torch.sin(x) * 2 + 1)
assert "site-packages" in sys.modules["lazytrain"].__file__, sys.modules["lazytrain"].__file__
print("test_python: torch.compile(backend='lazytrain') found the installed entry point")
PY
fi

# The wheel alone: a fresh venv outside the repository, the repository hidden.
"$python" -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check "$wheel" > "$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "installing the wheel into a fresh venv"; }
cat > "$tmp/smoke.sh" <<SCRIPT
set -euo pipefail
cd "$tmp"
"$tmp/venv/bin/python" - <<'PY'
import lazytrain as lt, lazytrain.nn as nn, lazytrain.debug.metrics as met
assert "site-packages" in lt.__file__, lt.__file__
model = nn.Linear(8, 2)
opt = lt.optim.AdamW(model.parameters(), lr=0.1)
for _ in range(3):
    opt.zero_grad()
    loss = model(lt.ones(4, 8)).pow(2).mean()
    loss.backward()
    opt.step()
    lt.sync()
print("wheel smoke: loss", round(loss.item(), 4), "compiles", met.counter_value("UncachedCompile"))
PY
"$tmp/venv/bin/lazytrain" --help > /dev/null
SCRIPT
hide="mount -t tmpfs none '$repo' && [ ! -e '$repo/pyproject.toml' ]"
if [ "$(id -u)" = 0 ] && unshare -m bash -c "$hide" 2> /dev/null; then
  echo "test_python: the wheel in a fresh venv, repository hidden ($repo is an empty tmpfs)"
  unshare -m bash -c "$hide && bash '$tmp/smoke.sh'" || fail "the wheel in a fresh venv"
else
  echo "test_python: the wheel in a fresh venv (no mount namespace here: repository not hidden)"
  bash "$tmp/smoke.sh" || fail "the wheel in a fresh venv"
fi

echo "test_python: pytest tests/python"
export LAZYTRAIN_EQUIVALENCE_REFERENCE=$repo/build/python_equivalence_reference
# The shared data (tokenizer goldens, vocabularies, WikiText-2): the directory
# CMake's tests use (LAZYTRAIN_DATA_DIR), else ../shared/data beside the repository.
data=$(sed -n 's/^LAZYTRAIN_DATA_DIR:PATH=//p' build/CMakeCache.txt 2> /dev/null || true)
export LAZYTRAIN_DATA_DIR=${LAZYTRAIN_DATA_DIR:-${data:-$repo/../shared/data}}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
cd "$repo"
# The grids against torch (every dtype x operand kind, every view x in-place op:
# thousands of small graphs) run on the interpreter, the reference backend that
# the cpu backend's own tests compare with: on the cpu backend each new graph
# compiles native code, which would take them from seconds to a quarter hour.
grids=(tests/python/test_type_promotion.py tests/python/test_reductions_torch.py tests/python/test_indexing_torch.py
       tests/python/test_losses_torch.py tests/python/test_views_inplace_torch.py)
ignore=()
for g in "${grids[@]}"; do ignore+=(--ignore "$g"); done
LAZYTRAIN_BACKEND=interpreter "$venv/bin/python" -m pytest "${grids[@]}" -q -rs -p no:cacheprovider
"$venv/bin/python" -m pytest tests/python "${ignore[@]}" -q -rs -p no:cacheprovider
echo "test_python: done in $((SECONDS - start)) s"

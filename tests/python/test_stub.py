"""The committed stub of the native extension, python/lazytrain/_C.pyi, is the
one the build generates from the extension being tested.

The stub is committed so that the API reference (docs/, sphinx-autoapi) and
type checkers read the extension's signatures and docstrings without building
it. The build generates it again (python/CMakeLists.txt: nanobind_add_stub,
target lazytrain_C_stub) beside _C and installs that one into the wheel
(scikit-build-core, pinned in pyproject.toml, lets CMake's installed files win
over the package folder's copies). So: with the wheel installed (CI:
scripts/test_python.sh), the installed lazytrain/_C.pyi; with the source tree's
package (its _C a link into build-dev), build-dev/python/_C.pyi.
"""
import difflib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lazytrain

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "python" / "lazytrain" / "_C.pyi"


def _generated_stub(tmp_path):
    extension = Path(os.path.realpath(lazytrain._C.__file__))
    stub = extension.parent / "_C.pyi"
    if stub.resolve() == COMMITTED.resolve():
        pytest.fail(f"{stub} is the committed stub itself: this test needs the built extension's")
    installed = extension.parent == Path(lazytrain.__file__).resolve().parent
    if installed:
        assert stub.is_file(), f"the installed package lacks {stub} (python/CMakeLists.txt installs it)"
        return stub
    # A build tree: its stub is current only once the lazytrain_C_stub target ran
    # after the extension was built; else generate it as that target does.
    if stub.is_file() and stub.stat().st_mtime >= extension.stat().st_mtime:
        return stub
    try:
        import nanobind  # noqa: F401
    except ImportError:
        pytest.skip(f"{stub} is missing or older than {extension.name}, and nanobind is not installed to generate "
                    f"it: cmake --build {extension.parent.parent} --target lazytrain_C_stub")
    out = tmp_path / "_C.pyi"
    subprocess.run([sys.executable, "-m", "nanobind.stubgen", "-q", "-i", str(extension.parent), "-m", "_C",
                    "-o", str(out)], check=True, cwd=extension.parent)
    return out


def test_committed_stub_is_the_generated_one(tmp_path):
    generated = _generated_stub(tmp_path)
    want = generated.read_text()
    have = COMMITTED.read_text() if COMMITTED.is_file() else ""
    if have != want:
        diff = "".join(difflib.unified_diff(have.splitlines(True), want.splitlines(True),
                                            "python/lazytrain/_C.pyi (committed)", f"{generated} (generated)", n=1))
        lines = diff.splitlines()
        shown = "\n".join(lines[:60]) + (f"\n... ({len(lines) - 60} more lines)" if len(lines) > 60 else "")
        pytest.fail("python/lazytrain/_C.pyi differs from the stub the build generates from the extension "
                    "(the API reference reads the committed one). Update it:\n"
                    f"    cp {generated} {COMMITTED}\n"
                    "(in a dev build: flock /tmp/lt-build.lock cmake --build build-dev --target lazytrain_C_stub && "
                    "cp build-dev/python/_C.pyi python/lazytrain/_C.pyi)\n" + shown)

"""Every code block of README.md and docs/ that a reader may run runs here
(markers: tests/python/docs_blocks.py). A page's Python blocks run in order in
one namespace, from a fresh temporary directory, with LAZYTRAIN_DATA_DIR set;
each page in a process of its own (docs_page_runner.py);
shell blocks marked `run` run with bash from the repository root, with the
installed `lazytrain` command on PATH. A shell block without a marker, or a
skip without its reason, fails."""
import importlib.util
import os
import subprocess
import sys

import pytest

from docs_blocks import PYTHON_LANGUAGES, REPO, SHELL_LANGUAGES, pages, parse

PAGES = {path: parse(path) for path in pages()}


def data_dir():
    return os.path.abspath(os.environ.get("LAZYTRAIN_DATA_DIR", os.path.join(REPO, "..", "shared", "data")))


def missing_requirements(page):
    return [m for m in page.requires if importlib.util.find_spec(m) is None]


def python_pages():
    return sorted(p for p, page in PAGES.items() if any(b.language in PYTHON_LANGUAGES and b.marker != "skip" for b in page.blocks))


def shell_run_blocks():
    return [b for page in PAGES.values() for b in page.blocks if b.language in SHELL_LANGUAGES and b.marker == "run"]


def test_every_shell_block_says_whether_it_runs():
    unmarked = [b.where for page in PAGES.values() for b in page.blocks if b.language in SHELL_LANGUAGES and b.marker is None]
    assert not unmarked, ("shell blocks need '<!-- docs-test: run -->' or '<!-- docs-test: skip REASON -->' on the line "
                          f"before the fence: {unmarked}")


def test_every_skip_gives_its_reason():
    bare = [b.where for page in PAGES.values() for b in page.blocks if b.marker == "skip" and not b.reason]
    assert not bare, f"'<!-- docs-test: skip -->' without a reason: {bare}"


def test_markers_are_known():
    bad = [f"{page.path}:{line}: {text}" for page in PAGES.values() for line, text in page.bad_markers]
    assert not bad, f"unknown docs-test markers (run, skip REASON, requires MODULES): {bad}"


def test_the_site_has_examples_that_run():
    assert len(python_pages()) >= 5, python_pages()
    assert len(shell_run_blocks()) >= 3, [b.where for b in shell_run_blocks()]


@pytest.mark.parametrize("path", python_pages())
def test_python_blocks_run(path, tmp_path):
    page = PAGES[path]
    missing = missing_requirements(page)
    if missing:
        pytest.skip(f"{path} needs {' '.join(missing)} (pip install -r python/requirements-interop.txt)")
    runner = os.path.join(os.path.dirname(os.path.abspath(__file__)), "docs_page_runner.py")
    env = dict(os.environ, LAZYTRAIN_DATA_DIR=data_dir())
    result = subprocess.run([sys.executable, runner, path], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{path}'s Python blocks failed:\n{result.stdout[-3000:]}\n{result.stderr[-6000:]}"
    assert "blocks ran" in result.stdout


@pytest.mark.parametrize("block", shell_run_blocks(), ids=[b.where for b in shell_run_blocks()])
def test_shell_blocks_run(block):
    missing = missing_requirements(PAGES[block.page]) + [m for m in block.requires if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"{block.page} needs {' '.join(missing)}")
    env = dict(os.environ, LAZYTRAIN_DATA_DIR=data_dir())
    # The installed `lazytrain` command (the venv's bin) and its python first; in a
    # source checkout without the wheel, the command scripts/build.sh built.
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.path.join(REPO, "build"), env.get("PATH", "")])
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block.code], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{block.where} exited {result.returncode}:\n{block.code}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"

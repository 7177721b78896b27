"""docs/torch_compile.md's code blocks run as written: every ```python block
of the page, in order, in one namespace (the options and Trainer snippets use
the model the first one trains), from a temporary directory. Skipped without
torch, transformers or accelerate (python/requirements-interop.txt)."""
import os
import re

import pytest

torch = pytest.importorskip("torch", reason="needs torch (pip install -r python/requirements-interop.txt)")
pytest.importorskip("transformers", reason="needs transformers (pip install -r python/requirements-interop.txt)")
pytest.importorskip("accelerate", reason="needs accelerate (pip install -r python/requirements-interop.txt)")

import lazytrain.torch_backend  # noqa: E402,F401  (backend="lazytrain" without the installed entry point)

PAGE = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "torch_compile.md")


def python_blocks():
    with open(PAGE) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)


def test_the_page_has_its_examples():
    assert len(python_blocks()) >= 3


def test_every_python_block_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for i, block in enumerate(python_blocks()):
        exec(compile(block, f"{PAGE} block {i + 1}", "exec"), namespace)  # noqa: S102 - the docs' own code
    assert namespace["loss"].item() < 7.0  # the first example trained (log(1000) ~ 6.9 at the start)
    assert namespace["args"].torch_compile_backend == "lazytrain"

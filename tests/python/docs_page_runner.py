"""Runs one page's Python blocks in order in one namespace, in this process:
`python tests/python/docs_page_runner.py docs/python.md`. Each page gets a
process of its own (tests/python/test_docs_examples.py), so one page's global
state (SPMD mode, seeds, execution modes) never reaches another. A failure's
traceback names the page and its line."""
import importlib.util
import os
import sys

from docs_blocks import PYTHON_LANGUAGES, REPO, parse


def main(path):
    page = parse(path)
    if "torch" in page.requires:
        # backend="lazytrain" without relying on the installed wheel's entry point
        # (scripts/test_python.sh checks that one on its own).
        import lazytrain.torch_backend  # noqa: F401
    namespace = {"__name__": "__main__"}
    ran = 0
    for block in page.blocks:
        missing = [m for m in block.requires if importlib.util.find_spec(m) is None]
        if missing:
            print(f"docs_page_runner: {block.where} needs {' '.join(missing)}: not run")
            continue
        if "torch" in block.requires:
            import lazytrain.torch_backend  # noqa: F401  (as above)
        if block.language in PYTHON_LANGUAGES and block.marker != "skip":
            code = "\n" * block.line + block.code  # line numbers of a failure point into the page
            exec(compile(code, os.path.join(REPO, path), "exec"), namespace)  # noqa: S102 - the docs' own code
            ran += 1
    print(f"docs_page_runner: {path}: {ran} blocks ran")


if __name__ == "__main__":
    main(sys.argv[1])

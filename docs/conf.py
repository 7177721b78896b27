"""Sphinx configuration of lazytrain's documentation site.

Pages are MyST Markdown (as PyTorch's, JAX's and MLX's sites are built: Sphinx
plus Markdown sources); the API reference is read statically from the Python
sources and the committed `.pyi` stubs by sphinx-autoapi, so the site builds
without compiling the native core. Build it with `bash scripts/build_docs.sh`
(warnings are errors; output in build/docs/html).
"""
import os
import sys

DOCS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(DOCS)
sys.path.insert(0, os.path.join(DOCS, "_ext"))

project = "lazytrain"
author = "the lazytrain developers"
copyright = "2026, the lazytrain developers"  # noqa: A001 - Sphinx's name

extensions = [
    "myst_parser",
    "autoapi.extension",
    "lazytrain_docs_checks",  # docs/_ext: code blocks must match the code (flags, paths, names)
    "lazytrain_benchmark_plots",  # docs/_ext: the performance page's plots, drawn from docs/data/
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "requirements.txt", "README.md", "data/**"]

myst_enable_extensions = ["colon_fence", "deflist", "fieldlist"]
myst_heading_anchors = 4  # links like [x](page.md#a-heading) are checked by Sphinx
suppress_warnings = []

# The API reference: the public Python package, its docstrings and stubs.
autoapi_type = "python"
autoapi_dirs = [os.path.join(REPO, "python", "lazytrain")]
autoapi_root = "reference/api"
autoapi_file_patterns = ["*.pyi", "*.py"]
autoapi_ignore = ["*/_C*", "*/torch_backend/lowering/*", "*/__main__.py"]
autoapi_options = ["members", "undoc-members", "show-inheritance", "show-module-summary", "imported-members"]
autoapi_keep_files = False
autoapi_add_toctree_entry = False
autoapi_python_class_content = "both"
autoapi_member_order = "groupwise"

html_theme = "furo"
html_title = "lazytrain"
html_static_path = []
pygments_style = "sphinx"

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
# autoapi writes reStructuredText and names its pages with ".rst" only when
# source_suffix has it (else with the first suffix, ".md", and MyST would parse
# rST as Markdown: no API objects at all). Nothing else in docs/ is .rst.
source_suffix[".rst"] = "restructuredtext"
# _C.pyi is the native extension's stub (nanobind's stubgen, committed; a test
# compares it with the build's): autoapi reads it so that the names lazytrain
# re-exports from _C (Tensor, the ops) show with their signatures.
autoapi_file_patterns = ["*.pyi", "*.py"]
autoapi_ignore = ["*/__main__.py"]
# inherited-members: only those inherited from a private base show (the extension).
autoapi_options = ["members", "undoc-members", "show-inheritance", "show-module-summary", "imported-members",
                   "inherited-members"]
autoapi_keep_files = False
autoapi_add_toctree_entry = False  # docs/reference/index.md links the pages
autoapi_python_class_content = "both"
autoapi_member_order = "groupwise"

# Types from outside lazytrain in the API's signatures and Bases: lines: -n
# cannot resolve them without intersphinx, which needs the network. Only the
# standard library's, numpy's, torch's and transformers' names are let through;
# a name of lazytrain's that does not resolve stays an error.
nitpick_ignore_regex = [
    (r"py:.*", r"(builtins|typing|collections|collections\.abc|enum|argparse)\.\w+"),
    (r"py:.*", r"(numpy|torch|transformers)(\.\w+)+"),
]

# The modules that get a page (docs/_ext/lazytrain_autoapi.py): what users
# import. Every other module (private ones, and implementation modules such as
# lazytrain.nn.layers) is read for its names but gets no page: its names show
# where users import them (lazytrain.nn.Linear, lazytrain.optim.AdamW,
# lazytrain.Tensor), and references to where they are defined resolve there.
extensions.append("lazytrain_autoapi")
lazytrain_api_modules = {
    "lazytrain",
    "lazytrain.autograd",
    "lazytrain.nn", "lazytrain.nn.functional", "lazytrain.nn.init", "lazytrain.nn.utils",
    "lazytrain.optim", "lazytrain.optim.lr_scheduler",
    "lazytrain.data",
    "lazytrain.models",
    "lazytrain.tokenizers",
    "lazytrain.trainer",
    "lazytrain.core", "lazytrain.core.xla_model",
    "lazytrain.debug", "lazytrain.debug.metrics", "lazytrain.debug.profiler",
    "lazytrain.distributed", "lazytrain.distributed.parallel_loader", "lazytrain.distributed.spmd",
    "lazytrain.distributed.xla_multiprocessing",
    "lazytrain.runtime",
    "lazytrain.experimental", "lazytrain.experimental.spmd_fully_sharded_data_parallel",
    "lazytrain.torch_backend",
    "lazytrain.torch_xla",
}

html_theme = "furo"
html_title = "lazytrain"
html_static_path = []
pygments_style = "sphinx"

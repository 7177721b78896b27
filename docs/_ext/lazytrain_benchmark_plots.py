"""Sphinx extension: draws the performance page's plots and writes its tables from
docs/data/benchmarks/ before the build reads the pages (tools/plot_benchmarks.py
does the work), into docs/_generated/ (not in git). docs/performance.md includes
docs/_generated/tables/*.md.inc and shows docs/_generated/plots/*.png, so the
page always shows the current data, and its plots and tables cannot disagree.

Inconsistent data (tools/plot_benchmarks.py --check) stops the build with the
list of problems."""
import importlib.util
import os

from sphinx.errors import ExtensionError
from sphinx.util import logging

DOCS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(DOCS)
SCRIPT = os.path.join(REPO, "tools", "plot_benchmarks.py")
GENERATED = os.path.join(DOCS, "_generated")

logger = logging.getLogger(__name__)


def _plot_benchmarks():
    spec = importlib.util.spec_from_file_location("lazytrain_plot_benchmarks", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def generate(app):
    try:
        written = _plot_benchmarks().generate(out_dir=GENERATED)
    except (ValueError, KeyError, OSError) as e:
        raise ExtensionError(f"tools/plot_benchmarks.py: {e}") from e
    logger.info("benchmark plots and tables: %d files in %s", len(written), os.path.relpath(GENERATED, REPO))


def setup(app):
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

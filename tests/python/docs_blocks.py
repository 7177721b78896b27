"""The fenced code blocks of README.md and the documentation site (docs/), with
the markers that say whether a test runs them (docs/contributing.md, "Writing
docs"):

    <!-- docs-test: run -->              the line before a shell block: a test runs it
    <!-- docs-test: skip REASON -->      the line before any block: not run, and why
    <!-- docs-test: requires torch ... -->  the line before a block: that block needs these
                                         modules; anywhere else in a page: all its blocks do

Python blocks run unless skipped; shell blocks (sh, bash, console, shell) must
carry `run` or `skip`; other fences (text, cpp, json, ...) are never run.
"""
from __future__ import annotations

import dataclasses
import os
import re

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PYTHON_LANGUAGES = {"python", "py", "python3"}
SHELL_LANGUAGES = {"sh", "bash", "console", "shell", "zsh", "shell-session", "shellsession"}

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
_MARKER = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<verb>\w+)(?P<rest>.*?)-->\s*$")


@dataclasses.dataclass
class Block:
    page: str  # path relative to the repository
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    marker: str | None  # "run", "skip" or None
    reason: str  # a skip's reason
    requires: list = dataclasses.field(default_factory=list)  # modules this block alone needs

    @property
    def where(self):
        return f"{self.page}:{self.line}"


@dataclasses.dataclass
class Page:
    path: str
    blocks: list
    requires: list  # modules its blocks need
    bad_markers: list  # (line, text) of markers that are neither run, skip nor requires


def pages():
    """README.md and every Markdown page of docs/ but the generated ones."""
    found = [os.path.join(REPO, "README.md")]
    for root, dirs, files in os.walk(os.path.join(REPO, "docs")):
        dirs[:] = sorted(d for d in dirs if not d.startswith("_") and os.path.join(root, d) != os.path.join(REPO, "docs", "reference", "api"))
        found += [os.path.join(root, f) for f in sorted(files) if f.endswith(".md")]
    return [os.path.relpath(p, REPO) for p in found]


def parse(relative_path, text=None):
    if text is None:
        with open(os.path.join(REPO, relative_path), encoding="utf-8") as f:
            text = f.read()
    lines = text.split("\n")
    blocks, requires, bad = [], [], []
    i = 0
    previous = ""  # the last non-blank line outside a block
    while i < len(lines):
        line = lines[i]
        marker = _MARKER.match(line)
        if marker and marker["verb"] == "requires":
            if not _next_is_fence(lines, i):  # before a block it is that block's alone
                requires += marker["rest"].split()
        elif marker and marker["verb"] not in ("run", "skip"):
            bad.append((i + 1, line.strip()))
        fence = _FENCE.match(line)
        if not fence:
            if line.strip():
                previous = line
            i += 1
            continue
        opening, info = fence["fence"], fence["info"].strip()
        language = info.split()[0].strip("{}").lower() if info else ""
        body = []
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(opening[0] * len(opening)) and lines[j].strip().strip(opening[0]) == ""):
            body.append(lines[j][len(fence["indent"]):] if lines[j].startswith(fence["indent"]) else lines[j])
            j += 1
        before = _MARKER.match(previous)
        verb = before["verb"] if before and before["verb"] in ("run", "skip") else None
        needs = before["rest"].split() if before and before["verb"] == "requires" else []
        blocks.append(Block(relative_path, i + 1, language, "\n".join(body) + "\n", verb,
                            before["rest"].strip() if verb else "", needs))
        previous = ""
        i = j + 1
    return Page(relative_path, blocks, requires, bad)


def _next_is_fence(lines, i):
    """Whether the next non-blank line after line i opens a fenced block."""
    for line in lines[i + 1:]:
        if line.strip():
            return bool(_FENCE.match(line))
    return False

"""README.md's links into the repository resolve: the file exists and, for
`page.md#anchor`, the page has a heading with that GitHub slug. (Links between
the site's pages are checked by the docs build: scripts/build_docs.sh.)"""
import os
import re

from docs_blocks import REPO


def github_slug(heading):
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(path):
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    return {github_slug(m) for m in re.findall(r"^#{1,6}\s+(.*)$", text, flags=re.M)}


def readme_links():
    with open(os.path.join(REPO, "README.md"), encoding="utf-8") as f:
        text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
    return [m for m in re.findall(r"\]\(([^)\s]+)\)", text) if not re.match(r"[a-z]+:", m)]


def test_readme_links_resolve():
    links = readme_links()
    assert len(links) >= 5, links
    broken = []
    for link in links:
        path, _, anchor = link.partition("#")
        target = os.path.join(REPO, path) if path else os.path.join(REPO, "README.md")
        if not os.path.exists(target):
            broken.append(f"{link}: no such file")
        elif anchor and anchor not in headings(target):
            broken.append(f"{link}: no heading '#{anchor}' in {path or 'README.md'}")
    assert not broken, broken


def test_slug_matches_github():
    assert github_slug("Checkpoints and resuming, evaluation, TensorBoard") == "checkpoints-and-resuming-evaluation-tensorboard"
    assert github_slug("`torch.compile(model)`: how") == "torchcompilemodel-how"

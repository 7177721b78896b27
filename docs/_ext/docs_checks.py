"""The docs' consistency checks, as plain functions (no Sphinx needed).

A page (docs/**/*.md, README.md) no longer matches the code when
  * a shell command `lazytrain <command> --flag` (also `./build/lazytrain`,
    under mpirun, `python -m lazytrain.cli`), in a shell block or inline code,
    names a command or flag the CLI does not have (docs/reference/cli_flags.json,
    generated from the CLI by tools/gen_cli_reference.py);
  * a repository path (scripts/..., tools/..., src/..., ...) in a code block or
    inline code does not exist;
  * Python code uses a `lazytrain.x.y` name the sources do not define
    (python_names.py reads them statically);
  * the page names a path outside the repository (`../shared/`, `/work/`),
    except the data directory's default beside LAZYTRAIN_DATA_DIR.

check_page(text, path, context) returns the problems of one page; the Sphinx
extension lazytrain_docs_checks.py reports them as warnings, and
tests/python/test_docs_checks.py runs the same functions.
"""
import collections
import glob
import json
import os
import re
import shlex

from python_names import PackageIndex, check_python_block

Problem = collections.namedtuple("Problem", "path line message")

SHELL_LANGS = {"sh", "bash", "shell", "console", "zsh", "shell-session", "shellsession"}
PYTHON_LANGS = {"python", "py", "python3", "pycon", "ipython", "ipython3"}
PATH_ROOTS = ("scripts", "tools", "bench", "examples", "src", "apps", "python", "tests", "docs", "cmake", "proto", ".ci")
# Commands that run the next words as a command (mpirun -np 2 ./build/lazytrain ...).
WRAPPERS = {"mpirun", "mpiexec", "srun", "time", "env", "timeout", "nohup", "exec", "taskset", "numactl", "sudo",
            "command", "xargs", "valgrind", "gdb", "perf", "uv", "poetry", "pipx"}


class Context:
    """What the pages are checked against: the repository, the CLI's flag table, the package's names."""

    def __init__(self, repo, cli_table=None):
        self.repo = os.path.abspath(repo)
        if cli_table is None:
            cli_table = load_cli_table(os.path.join(self.repo, "docs", "reference", "cli_flags.json"))
        self.cli = cli_table
        self.names = PackageIndex(os.path.join(self.repo, "python", "lazytrain"))


def load_cli_table(path):
    """{command: set of flag names} from cli_flags.json; "" holds the top-level flags."""
    with open(path, encoding="utf-8") as f:
        table = json.load(f)
    out = {"": {n for o in table["options"] for n in o["names"]}}
    for command in table["commands"]:
        out[command["name"]] = {n for o in command["options"] for n in o["names"]}
    return out


# -- reading a page ------------------------------------------------------------

Block = collections.namedtuple("Block", "lang first_line lines")  # first_line: of the first line inside the fence
Span = collections.namedtuple("Span", "line text")

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`\s]*)")


def split_page(text):
    """(fenced blocks, inline code spans outside them) of a Markdown page. MyST
    directives (```{toctree}) are neither."""
    blocks, spans = [], []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m:
            fence, lang = m.group(2), m.group(3).lower()
            body, j = [], i + 1
            while j < len(lines) and not re.match(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[j]):
                body.append(lines[j])
                j += 1
            if not lang.startswith("{"):
                blocks.append(Block(lang, i + 2, body))
            i = j + 1
            continue
        for m in re.finditer(r"(`+)(.+?)(?<!`)\1(?!`)", lines[i]):
            spans.append(Span(i + 1, m.group(2).strip()))
        i += 1
    return blocks, spans


# -- commands ------------------------------------------------------------------

def _logical_lines(block):
    """[(first line number, [(line number, text), ...], joined text)] of a shell block:
    continuation lines joined, comments and heredoc bodies left out, console output skipped."""
    lines = block.lines
    prompt = block.lang in ("console", "shell-session", "shellsession") and any(l.lstrip().startswith("$ ") for l in lines)
    out, current, heredoc = [], [], None
    for k, raw in enumerate(lines):
        number = block.first_line + k
        if heredoc is not None:
            if raw.strip() == heredoc:
                heredoc = None
            continue
        text = raw
        if prompt and not current:
            if not raw.lstrip().startswith("$ "):
                continue
            text = raw.lstrip()[2:]
        current.append((number, text))
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", text)
        if m:
            heredoc = m.group(1)
        if text.rstrip().endswith("\\"):
            continue
        joined = " ".join(t.rstrip()[:-1] if t.rstrip().endswith("\\") else t for _, t in current)
        out.append((current[0][0], current, joined))
        current = []
    if current:
        out.append((current[0][0], current, " ".join(t for _, t in current)))
    return out


def _words(text):
    """The shell words of a command line, split into simple commands (at ; && || | & ( ))."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: plain words
        tokens = text.split()
    commands, current = [], []
    for t in tokens:
        if t and set(t) <= set(";&|()"):
            commands.append(current)
            current = []
        else:
            current.append(t)
    commands.append(current)
    return [c for c in commands if c]


def _is_binary(word):
    return word == "lazytrain" or word.endswith("/lazytrain")


def _is_python(word):
    return re.fullmatch(r"(.*/)?(python[\d.]*|ltpy)", word) is not None


def _placeholder(word):
    return any(c in word for c in "<>$…{}") or "..." in word


def lazytrain_invocation(words):
    """(how it was called, the words after the program) when the simple command runs
    lazytrain's command line, else None."""
    k = 0
    while k < len(words) and re.fullmatch(r"[A-Za-z_]\w*=.*", words[k]):  # VAR=value
        k += 1
    if k == len(words):
        return None
    first = words[k]
    if _is_binary(first):
        return first, words[k + 1:]
    if _is_python(first):
        rest = words[k + 1:]
        if len(rest) >= 2 and rest[0] == "-m" and rest[1] in ("lazytrain", "lazytrain.cli"):
            return f"python -m {rest[1]}", rest[2:]
        return None
    if os.path.basename(first) in WRAPPERS:
        for j in range(k + 1, len(words)):
            if _is_binary(words[j]):
                return words[j], words[j + 1:]
    return None


def check_command(context, program, args):
    """[(word, message)] about one call of the command line: an unknown command or flag."""
    cli = context.cli
    found = []
    if program == "python -m lazytrain" and not os.path.exists(
            os.path.join(context.repo, "python", "lazytrain", "__main__.py")):
        found.append(("lazytrain", "'python -m lazytrain' does not run: python/lazytrain/__main__.py does not exist "
                                   "(the command is `lazytrain`, or `python -m lazytrain.cli`)"))
    command = None
    for word in args:
        if word == "--":
            break
        if command is None:
            if word.startswith("-"):
                flag = word.split("=")[0]
                if re.fullmatch(r"--?[A-Za-z][\w-]*", flag) and flag not in cli[""]:
                    found.append((flag, f"'lazytrain {flag}': lazytrain has no flag {flag}"))
                continue
            if _placeholder(word):
                return found
            if word not in cli:
                known = ", ".join(c for c in cli if c)
                found.append((word, f"'lazytrain {word}': no such command (the commands: {known})"))
                return found
            command = word
            continue
        flag = word.split("=")[0]
        if not re.fullmatch(r"--[A-Za-z][\w-]*", flag) or flag in ("--help", "-h"):
            continue
        if flag not in cli[command]:
            found.append((flag, f"'lazytrain {command} {flag}': {command} has no flag {flag} "
                                "(docs/reference/cli.md lists its flags)"))
    return found


def _command_problems(context, path, first_line, text, lines=(), strict=True):
    """Problems of the lazytrain calls in one command line (`lines`: its physical
    lines, [(number, text)], to name the line of each bad word). Not strict (printed
    output beside commands): `lazytrain <word>` counts only as a call of a known
    command, or when the program is spelled as a path (./build/lazytrain)."""
    problems = []
    for words in _words(text):
        call = lazytrain_invocation(words)
        if call is None:
            continue
        if not strict and call[0] == "lazytrain" and not (call[1] and call[1][0] in context.cli):
            continue
        for word, message in check_command(context, *call):
            line = next((n for n, t in lines if re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", t)), first_line)
            problems.append(Problem(path, line, message))
    return problems


# -- paths ---------------------------------------------------------------------

_PATH = re.compile(r"(?<![\w./$~@:-])(?:\./)?((?:" + "|".join(re.escape(r) for r in PATH_ROOTS) +
                   r")/(?:\{[^{}\s`]*\}|[^\s`'\"()\[\]|,;{}])*)")


def _expand_braces(path):
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    out = []
    for choice in m.group(1).split(","):
        out += _expand_braces(path[:m.start()] + choice + path[m.end():])
    return out


def repository_paths(text):
    """The repository paths a piece of code names: (path as written, [paths to look for])."""
    out = []
    for m in _PATH.finditer(text):
        path = m.group(1)
        path = re.sub(r"::.*$", "", path)  # pytest's file::test
        path = re.sub(r"#.*$", "", path)  # page.md#anchor
        path = re.sub(r":\d+(?::\d+)?$", "", path)  # file:line
        path = path.rstrip(".,:;!?'\"=")
        if not path or "*" in path or "<" in path or "$" in path or "…" in path or "..." in path or "%" in path:
            continue
        if path.count("{") != path.count("}"):
            continue
        out.append((path, _expand_braces(path)))
    return out


def check_paths(context, path, line, text):
    problems = []
    for written, candidates in repository_paths(text):
        missing = [c for c in candidates if not os.path.exists(os.path.join(context.repo, c))]
        if missing:
            problems.append(Problem(path, line, f"{', '.join(missing)}: no such file or folder in the repository"
                                    + (f" (from {written})" if candidates != [written] else "")))
    return problems


# -- paths outside the repository ------------------------------------------------

_OUTSIDE = re.compile(r"(?:\.\./)+shared/\S*|(?<![\w.~-])/work/\S*")


def check_outside(path, text):
    """Problems for `../shared/...` and `/work/...` anywhere in a page. The data
    directory's default, `../shared/data` in a line (or hard-wrapped paragraph)
    that names LAZYTRAIN_DATA_DIR, is fine."""
    problems = []
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        for m in _OUTSIDE.finditer(line):
            found = m.group(0).rstrip(".,;:)`'\"")
            if re.fullmatch(r"\.\./shared/data/?", found) and "LAZYTRAIN_DATA_DIR" in _paragraph(lines, number - 1):
                continue
            problems.append(Problem(path, number, f"{found}: a path outside the repository (data paths go "
                                    "through $LAZYTRAIN_DATA_DIR; its default ../shared/data is said once)"))
    return problems


def _paragraph(lines, i):
    """The non-blank lines around lines[i], joined."""
    start, end = i, i
    while start > 0 and lines[start - 1].strip():
        start -= 1
    while end + 1 < len(lines) and lines[end + 1].strip():
        end += 1
    return "\n".join(lines[start:end + 1])


# -- a page ----------------------------------------------------------------------

def check_page(text, path, context):
    """Every problem of one Markdown page (path: how to name it in messages)."""
    problems = check_outside(path, text)
    blocks, spans = split_page(text)
    aliases = {}  # a page's Python blocks run in one namespace: imports carry over
    for block in blocks:
        for k, line in enumerate(block.lines):
            problems += check_paths(context, path, block.first_line + k, line)
        if block.lang in PYTHON_LANGS:
            for line, message in check_python_block(context.names, "\n".join(block.lines), aliases, block.first_line):
                problems.append(Problem(path, line, message))
        else:
            # Shell blocks, and commands shown in text or unlabelled blocks with their output.
            shell = block.lang in SHELL_LANGS
            for first, lines, joined in _logical_lines(block):
                problems += _command_problems(context, path, first, joined, lines, strict=shell)
    for span in spans:
        problems += check_paths(context, path, span.line, span.text)
        text_ = span.text[2:] if span.text.startswith("$ ") else span.text
        problems += _command_problems(context, path, span.line, text_)
    return sorted(set(problems), key=lambda p: (p.line, p.message))


def pages(repo):
    """The Markdown pages of docs/ (what Sphinx reads) and README.md, as repository-relative paths."""
    docs = os.path.join(repo, "docs")
    found = []
    for full in glob.glob(os.path.join(docs, "**", "*.md"), recursive=True):
        rel = os.path.relpath(full, repo)
        parts = rel.split(os.sep)
        if any(p.startswith(("_", ".")) for p in parts[1:]) or rel.startswith(os.path.join("docs", "reference", "api")):
            continue
        found.append(rel)
    readme = os.path.join(repo, "README.md")
    return sorted(found) + (["README.md"] if os.path.exists(readme) else [])


def check_repository(repo, only=None):
    """Problems of every page (or of the repository-relative paths in `only`)."""
    context = Context(repo)
    problems = []
    for rel in only or pages(repo):
        with open(os.path.join(repo, rel), encoding="utf-8") as f:
            problems += check_page(f.read(), rel, context)
    return problems


if __name__ == "__main__":
    import sys
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = check_repository(root, sys.argv[1:] or None)
    for p in found:
        print(f"{p.path}:{p.line}: {p.message}")
    sys.exit(1 if found else 0)

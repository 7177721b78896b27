"""The docs build's consistency checks (docs/_ext/docs_checks.py), without Sphinx:
small fake pages with a good and a bad flag, a missing path, a renamed function,
then the repository's own pages (docs/ must have no problem; README.md's are printed)."""
import os
import sys
import warnings

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "docs", "_ext"))

import docs_checks  # noqa: E402

CLI = {"": {"-h", "--help", "--help-json"},
       "run_mlm": {"-h", "--help", "--output_dir", "--max_steps", "--evaluation_strategy", "--eval_strategy"},
       "tokenize": {"-h", "--help", "--tokenizer", "--text"}}


@pytest.fixture(scope="module")
def context():
    return docs_checks.Context(REPO, cli_table=CLI)


def messages(text, context):
    return [(p.line, p.message) for p in docs_checks.check_page(text, "page.md", context)]


def shell(body, lang="sh"):
    return f"# Page\n\n<!-- docs-test: skip fake -->\n```{lang}\n{body}\n```\n"


def test_good_flags_pass(context):
    page = shell("./build/lazytrain run_mlm --output_dir /tmp/x \\\n  --max_steps 2 --eval_strategy=no --help\n"
                 "mpirun -np 2 lazytrain tokenize --tokenizer t --text 'a --b'\n"
                 "lazytrain <command> --help\nlazytrain --help-json")
    assert messages(page, context) == []


def test_bad_flag_fails_with_its_line(context):
    page = shell("./build/lazytrain run_mlm --output_dir /tmp/x \\\n  --max_step 2")
    assert messages(page, context) == [(6, "'lazytrain run_mlm --max_step': run_mlm has no flag --max_step "
                                           "(docs/reference/cli.md lists its flags)")]


def test_unknown_command_fails(context):
    found = messages("Run `lazytrain run_mlx --max_steps 2`.\n", context)
    assert len(found) == 1 and "'lazytrain run_mlx': no such command" in found[0][1]


def test_inline_code_and_text_blocks(context):
    assert messages("`lazytrain tokenize --txt x`\n", context)[0][1].startswith("'lazytrain tokenize --txt'")
    # Printed output beside a command: only calls of known commands or ./build/lazytrain count.
    text = "```text\nlazytrain default / PyTorch 1.2x\nbuild/lazytrain tokenize --tokenizer t\n```\n"
    assert messages(text, context) == []
    assert len(messages("```\nbuild/lazytrain tokenise --text x\n```\n", context)) == 1


def test_comments_and_heredocs_are_not_commands(context):
    page = shell("lazytrain run_mlm --output_dir o  # --not_a_flag\ncat > f <<EOF\nlazytrain run_mlm --nope\nEOF")
    assert messages(page, context) == []


def test_missing_path_fails(context):
    found = messages("See `tools/gen_cli_reference.py`, `apps/flag_table_json.{h,cpp}`, `tests/cli/*.sh`, "
                     "`docs/<page>.md` and `tools/no_such_tool.py`.\n" + shell("bash scripts/no_such_script.sh"),
                     context)
    assert [m for _, m in found] == ["tools/no_such_tool.py: no such file or folder in the repository",
                                     "scripts/no_such_script.sh: no such file or folder in the repository"]
    assert "apps/nope.h, apps/nope.cpp" in messages("`apps/nope.{h,cpp}`\n", context)[0][1]


def test_paths_outside_the_repository(context):
    text = ("The data directory `LAZYTRAIN_DATA_DIR` defaults to\n`../shared/data`.\n\n"
            "Read ../shared/data/wikitext-2/valid.txt or /work/main/x.\n")
    assert [line for line, _ in messages(text, context)] == [4, 4]


def test_python_names(context):
    page = ("```python\nimport lazytrain as lt\nfrom lazytrain.optim import AdamW\n"
            "m = lt.nn.Linear(2, 3)\nopt = AdamW(m.parameters())\nlt.nn.functional.gelu\n"
            "lt.debug.metrics.short_metrics_report()\nm.weight.grad.zero_()\n```\n"
            "Then\n```python\nlt.optim.AdamW\nlt.optim.AdamWRenamed\nfrom lazytrain.nn import Lineer\n"
            "import lazytrain.debug.metricz\n```\n")
    found = messages(page, context)
    assert [line for line, _ in found] == [13, 14, 15], found
    assert "lazytrain.optim has no name 'AdamWRenamed'" in found[0][1]


def test_torch_xla_alias_names(context):
    """lazytrain.torch_xla.<m> is lazytrain.<m> (the import alias of PyTorch/XLA scripts)."""
    page = ("```python\nimport lazytrain.torch_xla.runtime as xr\n"
            "import lazytrain.torch_xla.distributed.spmd as xs\n"
            "from lazytrain.torch_xla.experimental.spmd_fully_sharded_data_parallel import "
            "SpmdFullyShardedDataParallel\nxs.mark_sharding\nxr.use_spmd\n"
            "import lazytrain.torch_xla.distributed.spmdz\nxs.mark_shardingz\n```\n")
    found = messages(page, context)
    assert [line for line, _ in found] == [7, 8], found
    assert "lazytrain.torch_xla.distributed.spmd has no name 'mark_shardingz'" in found[1][1]


def test_renamed_function_fails(tmp_path):
    """A page written against old_name fails once the package calls it new_name."""
    pkg = tmp_path / "python" / "lazytrain"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .ops import new_name\nfrom . import sub\n")
    (pkg / "ops.py").write_text("def new_name():\n    pass\n")
    (pkg / "sub" / "__init__.py").write_text("from .dyn import *\n")
    (pkg / "sub" / "dyn.py").write_text("def __getattr__(name):\n    return name\n")
    context = docs_checks.Context(str(tmp_path), cli_table=CLI)
    page = "```python\nimport lazytrain as lt\nlt.new_name()\nlt.old_name()\nlt.sub.anything\n```\n"
    assert messages(page, context) == [(4, "lt.old_name: lazytrain has no name 'old_name' (in lazytrain's sources)")]


def test_the_repository_pages():
    """docs/ pages have no problem; README.md (being rewritten) has its problems printed, not asserted."""
    context = docs_checks.Context(REPO)
    docs, readme = [], []
    for rel in docs_checks.pages(REPO):
        with open(os.path.join(REPO, rel), encoding="utf-8") as f:
            found = docs_checks.check_page(f.read(), rel, context)
        (readme if rel == "README.md" else docs).extend(found)
    for p in readme:
        print(f"{p.path}:{p.line}: {p.message}")
    if readme:
        warnings.warn(f"README.md: {len(readme)} docs-check problems (see the test's output)")
    assert [f"{p.path}:{p.line}: {p.message}" for p in docs] == []

"""The benchmark results behind docs/performance.md (docs/data/benchmarks/) and the
script that turns them into the page's tables and plots (tools/plot_benchmarks.py):
the data parse, every measurement says its machine, date and command, the tables the
page includes and the plots it shows are generated, and the plots are drawn the same
twice (skipped where matplotlib is missing; the docs build's venv has it)."""
import csv
import importlib.util
import json
import os
import re
import shutil

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(REPO, "docs", "data", "benchmarks")


def plot_benchmarks():
    spec = importlib.util.spec_from_file_location("plot_benchmarks", os.path.join(REPO, "tools", "plot_benchmarks.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pb():
    return plot_benchmarks()


def page_references():
    """The generated tables and plots docs/performance.md includes and shows."""
    with open(os.path.join(REPO, "docs", "performance.md"), encoding="utf-8") as f:
        page = f.read()
    tables = re.findall(r"^```\{include\} _generated/tables/(\S+)$", page, re.M)
    plots = re.findall(r"^```\{figure\} _generated/plots/(\S+)$", page, re.M)
    return tables, plots


def test_every_data_file_parses():
    names = sorted(os.listdir(DATA))
    assert "training_step.csv" in names and "machines.json" in names, names
    for name in names:
        path = os.path.join(DATA, name)
        if name.endswith(".json"):
            with open(path, encoding="utf-8") as f:
                json.load(f)
        elif name.endswith(".csv"):
            with open(path, encoding="utf-8", newline="") as f:
                rows = list(csv.DictReader(f))
            assert rows, name
        else:
            pytest.fail(f"docs/data/benchmarks/{name}: only .json and .csv files are read")


def test_the_data_are_consistent(pb):
    assert pb.check(pb.load()) == []


def test_every_measurement_has_its_machine_date_and_command(pb):
    data = pb.load()
    assert data["step_rows"]
    for i, row in enumerate(data["step_rows"], start=2):
        where = f"training_step.csv:{i}"
        assert row["machine"] in data["machines"], where
        assert re.match(r"^\d{4}-\d{2}-\d{2}$", row["date"]), where
        run = data["step_tables"][row["table"]]["runs"][row["run"]]
        assert run["command"] and all(c.strip() for c in run["command"]), where
        assert row["ratio"], where
    assert data["tables"]
    for table in data["tables"]:
        where = f"{table['source']}: {table['id']}"
        assert table["machine"] in data["machines"], where
        assert re.match(r"^\d{4}-\d{2}-\d{2}$", table["date"]), where
        assert table["command"] and all(c.strip() for c in table["command"]), where


def test_one_current_training_step_table_per_machine_kind_and_benchmark(pb):
    data = pb.load()
    for tid, meta in data["step_tables"].items():
        rows = [r for r in data["step_rows"] if r["table"] == tid]
        assert rows, f"table {tid} has no rows"
        assert {r["date"] for r in rows} == {meta["date"]}, tid  # dated once
    scripts = {}
    for tid, meta in data["step_tables"].items():
        script = "run_gpt2" if any("run_gpt2.sh" in c for run in meta["runs"].values() for c in run["command"]) else "run_all"
        key = (meta["machine"], script)
        assert key not in scripts, f"{tid} and {scripts.get(key)}: two tables of the same benchmark on one machine kind"
        scripts[key] = tid


def test_check_names_a_ratio_that_does_not_match(pb, tmp_path):
    data_dir = tmp_path / "benchmarks"
    shutil.copytree(DATA, data_dir)
    path = data_dir / "training_step.csv"
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    row = next(r for r in rows if r["lazytrain_tok_s"] and r["peer_tok_s"])
    row["ratio"] = "%.2f" % (float(row["ratio"]) + 0.5)
    row2 = next(r for r in rows if r is not row)
    row2["date"] = ""
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    problems = pb.check(pb.load(str(data_dir)))
    assert any("ratio" in p for p in problems), problems
    assert any("no date" in p for p in problems), problems
    assert pb.main(["--check", "--data", str(data_dir)]) == 1


def test_the_tables_the_page_includes_are_generated(pb, tmp_path):
    written = pb.generate(out_dir=str(tmp_path), plots=False)
    names = {os.path.basename(p) for p in written}
    tables, _ = page_references()
    assert tables, "docs/performance.md includes no generated table"
    assert set(tables) <= names, set(tables) - names
    for name in tables:
        text = (tmp_path / "tables" / name).read_text(encoding="utf-8")
        if name == "scaling.md.inc":  # a model computed from a dated table, which it names
            assert "Intel Xeon with AMX table (2026-12-04)" in text, text
            continue
        assert "**Machine**" in text and "**Date**" in text, name
        assert "```sh\n" in text and "<!-- docs-test: skip " in text, name  # the command, marked for the docs test
    amx = (tmp_path / "tables" / "xeon-amx.md.inc").read_text(encoding="utf-8")
    assert "| bert-base (b4, 2+3) | f32 | 2 | 482.3 |" in amx
    llama = (tmp_path / "tables" / "xeon-amx-llama.md.inc").read_text(encoding="utf-8")
    assert "| 1.47 |" in llama and "| 2.01 |" in llama


def test_the_plots_are_drawn_and_deterministic(pb, tmp_path):
    pytest.importorskip("matplotlib")
    first = pb.generate(out_dir=str(tmp_path / "a"))
    second = pb.generate(out_dir=str(tmp_path / "b"))
    plots = sorted(os.path.basename(p) for p in first if p.endswith(".png"))
    _, shown = page_references()
    assert shown and set(shown) <= set(plots), (shown, plots)
    for name in plots:
        a = (tmp_path / "a" / "plots" / name).read_bytes()
        b = (tmp_path / "b" / "plots" / name).read_bytes()
        assert a[:8] == b"\x89PNG\r\n\x1a\n" and len(a) > 10000, name
        assert a == b, f"{name} differs between two runs"
    assert len(second) == len(first)

"""examples/python run as a user runs them."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.environ.get("LAZYTRAIN_DATA_DIR", os.path.join(ROOT, "..", "shared", "data"))


def test_custom_training_loop_compiles_once_after_warmup():
    script = os.path.join(ROOT, "examples", "python", "custom_training_loop.py")
    r = subprocess.run([sys.executable, script, "--steps", "12", "--data", os.path.join(DATA, "wikitext-2", "valid.txt")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "graphs compiled after warm-up: 0" in r.stdout, r.stdout
    losses = [float(line.split()[3]) for line in r.stdout.splitlines() if line.startswith("step")]
    assert len(losses) == 2 and losses[-1] < losses[0]
    assert "Counter: CachedCompile" in r.stdout


def test_bad_data_path_is_one_clear_error():
    script = os.path.join(ROOT, "examples", "python", "custom_training_loop.py")
    r = subprocess.run([sys.executable, script, "--data", "/nonexistent/valid.txt"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "--data /nonexistent/valid.txt: no such file" in r.stderr

"""A PyTorch/XLA training loop runs on lazytrain with only its imports changed
(issue 56, "Done when" 1): examples/python/torch_xla_loop.py is
torch_xla_loop.orig.py.txt (the PyTorch/XLA original) with `torch_xla`
replaced by `lazytrain.torch_xla` in its import lines and nothing else. Run as
a user runs it, its 5 losses equal the same file's loop in eager PyTorch on
the CPU (the original run over stand-in torch_xla modules that do what
torch_xla does on one CPU: no device, optimizer.step, no sync) and the step
compiles once after warm-up."""
import difflib
import os
import re
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the torch_backend tests need torch==2.13.0)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "python", "torch_xla_loop.py")
ORIGINAL = os.path.join(ROOT, "examples", "python", "torch_xla_loop.orig.py.txt")
# Where the lazytrain this test imports lives (the installed wheel in CI, python/ in a
# source checkout): the subprocesses import that one, never the source tree over a wheel.
import lazytrain  # noqa: E402

PACKAGE_PATH = os.path.dirname(os.path.dirname(os.path.abspath(lazytrain.__file__)))
STEP = re.compile(r"^step (\d+) loss (\S+) compiles (\d+)$")

# torch_xla as eager PyTorch on the CPU: the reference the example is compared with.
CPU_TORCH_XLA = {
    "torch_xla/__init__.py": "import torch\n"
                             "def device(index=None):\n    return torch.device('cpu')\n"
                             "def sync(wait=False):\n    pass\n",
    "torch_xla/core/__init__.py": "",
    "torch_xla/core/xla_model.py": "import torch\n"
                                   "def xla_device(n=None):\n    return torch.device('cpu')\n"
                                   "def optimizer_step(optimizer, barrier=False, optimizer_args=None):\n"
                                   "    return optimizer.step(**(optimizer_args or {}))\n"
                                   "def master_print(*args, **kwargs):\n    print(*args, **kwargs)\n",
    "torch_xla/debug/__init__.py": "",
    "torch_xla/debug/metrics.py": "def counter_value(name):\n    return 0\n"
                                  "def short_metrics_report(*args):\n    return 'eager'\n",
    "torch_xla/distributed/__init__.py": "",
    "torch_xla/distributed/parallel_loader.py": "class MpDeviceLoader:\n"
                                                "    def __init__(self, loader, device):\n"
                                                "        self.loader = loader\n"
                                                "    def __iter__(self):\n        return iter(self.loader)\n",
    "torch_xla/runtime.py": "def world_size():\n    return 1\n"
                            "def global_ordinal():\n    return 0\n",
}


def _run(script, env_path):
    env = dict(os.environ, PYTHONPATH=env_path)
    r = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=600, env=env)
    # Exit status 0, also at interpreter exit: torch's autograd thread of the device once aborted
    # the process there (lazy_device/_device.py, _let_autograd_threads_settle).
    assert r.returncode == 0, r.stdout + r.stderr
    steps = [STEP.match(line) for line in r.stdout.splitlines()]
    steps = [(float(m.group(2)), int(m.group(3))) for m in steps if m]
    assert len(steps) == 5, r.stdout
    return steps, r.stdout


def test_the_example_differs_from_the_torch_xla_original_only_in_its_imports():
    with open(ORIGINAL) as f:
        original = f.read().splitlines()
    with open(EXAMPLE) as f:
        example = f.read().splitlines()
    changed = [line for line in difflib.unified_diff(original, example, lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed, "the example is the original unchanged"
    for line in changed:
        assert re.match(r"^[+-](import |from )", line), f"a changed line that is not an import: {line}"
    # Each import names the same module with the package torch_xla -> lazytrain.torch_xla.
    removed = [line[1:] for line in changed if line[0] == "-"]
    added = [line[1:] for line in changed if line[0] == "+"]
    expected = [re.sub(r"^import torch_xla$", "import lazytrain.torch_xla as torch_xla",
                       re.sub(r"\btorch_xla\.", "lazytrain.torch_xla.", line)) for line in removed]
    assert added == expected


def test_the_example_trains_as_eager_pytorch_and_compiles_once_after_warmup(tmp_path):
    lazy, out = _run(EXAMPLE, PACKAGE_PATH)
    assert "replicas 1 ordinal 0 device lazytrain:0" in out
    assert "Metric: CompileTime" in out and "Counter: CachedCompile" in out, out  # the metrics report
    compiles = [c for _, c in lazy]
    assert compiles[1] == compiles[-1] >= 1, f"UncachedCompile after each step: {compiles}"

    for name, text in CPU_TORCH_XLA.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    script = tmp_path / "torch_xla_loop.py"
    with open(ORIGINAL) as f:
        script.write_text(f.read())
    eager, _ = _run(str(script), str(tmp_path))
    for step, ((got, _), (want, _)) in enumerate(zip(lazy, eager)):
        assert abs(got - want) <= 1e-4, f"step {step}: lazytrain {got}, eager {want}"


def run_fresh(code):
    """`code`'s standard output, run in a new interpreter on the lazytrain this test imported
    (the lazy device is registered once per process); it must exit with status 0."""
    env = dict(os.environ, PYTHONPATH=PACKAGE_PATH)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout.strip()


def test_lazytrain_torch_xla_modules_are_lazytrains_own():
    code = ("import lazytrain, torch\n"
            "import lazytrain.torch_xla as torch_xla\n"
            "import lazytrain.torch_xla.core.xla_model as xm\n"
            "import lazytrain.torch_xla.distributed.parallel_loader as pl\n"
            "from lazytrain.torch_xla.distributed import xla_multiprocessing as xmp, spmd as xs\n"
            "import lazytrain.torch_xla.debug.metrics as met\n"
            "import lazytrain.torch_xla.runtime as xr\n"
            "assert xm is lazytrain.core.xla_model and pl is lazytrain.distributed.parallel_loader\n"
            "assert xmp is lazytrain.distributed.xla_multiprocessing and xs is lazytrain.distributed.spmd\n"
            "assert met is lazytrain.debug.metrics and xr is lazytrain.runtime and torch_xla.runtime is xr\n"
            "assert torch_xla.device() == xm.xla_device() == torch.device('lazytrain', 0)\n"
            "assert torch_xla.devices() == [torch.device('lazytrain', 0)]\n"
            "assert lazytrain.device() == lazytrain.device(0)  # lazytrain's own device, unchanged\n"
            "x = torch.ones(3, device=torch_xla.device()) * 2\n"
            "step = torch_xla.compile(lambda t: (t + 1).sum())\n"
            "assert step(x).item() == 9.0\n"
            "try:\n"
            "    import lazytrain.torch_xla.no_such_module\n"
            "except ModuleNotFoundError as e:\n"
            "    assert 'lazytrain.torch_xla.no_such_module' in str(e)\n"
            "else:\n"
            "    raise AssertionError('imported a module that does not exist')\n"
            "print('ok')\n")
    assert run_fresh(code) == "ok"


def test_a_native_script_keeps_lazytrains_device():
    # Without lazytrain.torch_xla, torch imported or not, xm.xla_device() is lazytrain's native device.
    code = ("import torch, lazytrain as lt\n"
            "import lazytrain.core.xla_model as xm\n"
            "assert not isinstance(xm.xla_device(), torch.device), xm.xla_device()\n"
            "print((lt.ones(2).to(xm.xla_device()) * 2).tolist())\n")
    assert run_fresh(code) == "[2.0, 2.0]"

"""torch.compile(backend="lazytrain") beyond the models (issue 54 items 1, 5
and 7): the backend found by name, its options, the fallback for ops without
a lowering in both modes (forward and backward), dynamic shapes and the
signature warning, Dynamo's graph breaks, and inputs lazytrain cannot take.

The tests' default fallback is "error" (LAZYTRAIN_DYNAMO_FALLBACK below); the
fallback tests remove ops from LOWERINGS for the test's duration.
"""
import copy
import importlib
import os
import subprocess
import sys
import warnings

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the torch_backend tests need torch==2.13.0)")

import lazytrain.torch_backend as ltb  # noqa: E402  (registers backend "lazytrain")
from lazytrain.debug import metrics  # noqa: E402
from lazytrain.torch_backend import LoweringError, UnsupportedInput, _backend  # noqa: E402
from lazytrain.torch_backend.lowering import LOWERINGS  # noqa: E402

os.environ["LAZYTRAIN_DYNAMO_FALLBACK"] = "error"
aten = torch.ops.aten
THIS_FILE = os.path.basename(__file__)
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")



def counter(name):
    return metrics.counter_value(name)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def without_sin_cos(monkeypatch):
    """aten.sin and aten.cos without lowerings (sin's backward is cos), and the
    warn-once record fresh."""
    monkeypatch.delitem(LOWERINGS, aten.sin.default)
    monkeypatch.delitem(LOWERINGS, aten.cos.default)
    monkeypatch.setattr(_backend, "_warned_ops", set())


def line_of(marker):
    """The line number in this file of the line that ends with `marker`."""
    with open(__file__) as f:
        for i, line in enumerate(f, 1):
            if line.rstrip().endswith(marker) and "line_of(" not in line:
                return i
    raise AssertionError(marker)


# ---------------------------------------------------------------- registration, options


def test_backend_listed_and_found_by_name():
    assert "lazytrain" in torch._dynamo.list_backends()
    assert torch._dynamo.lookup_backend("lazytrain") is ltb.lazytrain_backend
    x = torch.randn(4, 3)
    out = torch.compile(lambda t: torch.tanh(t) * 2 + 1, backend="lazytrain")(x)
    torch.testing.assert_close(out, torch.tanh(x) * 2 + 1)


def _declared_entry_point():
    import tomllib

    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    return project["entry-points"]["torch_dynamo_backends"]["lazytrain"]


def test_entry_point_finds_the_backend_without_importing_lazytrain(tmp_path):
    """pyproject.toml's torch_dynamo_backends entry point, as `pip install .`
    writes it (a dist-info on the path), lets a process that never imports
    lazytrain compile with backend="lazytrain"."""
    target = _declared_entry_point()
    module, _, attr = target.partition(":")
    assert getattr(importlib.import_module(module), attr) is ltb.lazytrain_backend
    info = tmp_path / "lazytrain_entry_point_test-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: lazytrain-entry-point-test\nVersion: 0\n")
    (info / "entry_points.txt").write_text(f"[torch_dynamo_backends]\nlazytrain = {target}\n")
    code = ("import sys, torch\n"
            "f = torch.compile(lambda x: x * 2 + 1, backend='lazytrain')\n"
            "print(f(torch.ones(2)).tolist(), 'lazytrain' in sys.modules)\n")
    # The lazytrain this test imported (the installed wheel in CI, the source tree here).
    import lazytrain

    package_root = os.path.dirname(os.path.dirname(lazytrain.__file__))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), package_root]))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[3.0, 3.0] True", done.stdout


def test_compile_is_static_by_default():
    before = counter("DynamoGraphs")
    f = ltb.compile(lambda t: (t * t).sum(-1))
    for n in (3, 5, 3):
        x = torch.randn(2, n)
        torch.testing.assert_close(f(x), (x * x).sum(-1))
    # dynamic=False: each new shape is a new static graph, the repeated one is cached.
    assert counter("DynamoGraphs") - before == 2


@pytest.mark.parametrize("options, match", [
    ({"bogus": 1}, "unknown options.*bogus"),
    ({"fallback": "eager"}, "fallback.*'eager'"),
    ({"max_different_graphs": 0}, "max_different_graphs"),
    ({"max_different_graphs": "4"}, "max_different_graphs"),
])
def test_bad_options_raise_value_error(options, match):
    f = torch.compile(lambda t: t + 1, backend="lazytrain", options=options)
    with pytest.raises(ValueError, match=match):
        f(torch.ones(2))


def test_bad_fallback_from_the_environment(monkeypatch):
    monkeypatch.setenv("LAZYTRAIN_DYNAMO_FALLBACK", "sometimes")
    with pytest.raises(ValueError, match="sometimes"):
        torch.compile(lambda t: t + 1, backend="lazytrain")(torch.ones(2))


# ---------------------------------------------------------------- fallback


def two_sins(x, w):
    h = x @ w
    return torch.sin(h) * 2 + torch.sin(h + 1)  # <- the unlowered op


def test_partition_matches_eager_warns_once_and_counts(without_sin_cos):
    x, w = torch.randn(5, 4), torch.randn(4, 6)
    before = counter("DynamoFallbackNodes")
    f = torch.compile(two_sins, backend="lazytrain", options={"fallback": "partition"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = f(x, w)
        out2 = f(x * 2, w)
        # Another graph with the same op: warned once per op, not per graph.
        g = torch.compile(lambda t: torch.sin(t).sum(), backend="lazytrain", options={"fallback": "partition"})
        torch.testing.assert_close(g(x), torch.sin(x).sum())
    torch.testing.assert_close(out, two_sins(x, w))
    torch.testing.assert_close(out2, two_sins(x * 2, w))
    ours = [str(c.message) for c in caught if "lazytrain" in str(c.message)]
    assert len(ours) == 1, ours
    assert "aten.sin.default" in ours[0] and "fallback" in ours[0]
    assert f"{THIS_FILE}\", line {line_of('# <- the unlowered op')}" in ours[0], ours[0]
    assert counter("DynamoFallbackNodes") - before == 3  # two sins, then one


def test_partition_is_the_default_without_the_environment(monkeypatch, without_sin_cos):
    monkeypatch.delenv("LAZYTRAIN_DYNAMO_FALLBACK")
    x, w = torch.randn(5, 4), torch.randn(4, 6)
    with pytest.warns(UserWarning, match="aten.sin.default"):
        out = torch.compile(two_sins, backend="lazytrain")(x, w)
    torch.testing.assert_close(out, two_sins(x, w))


def test_error_names_the_op_and_the_source_line(without_sin_cos):
    x, w = torch.randn(5, 4), torch.randn(4, 6)
    for options in ({"fallback": "error"}, None):  # None: the environment's "error"
        torch._dynamo.reset()
        f = torch.compile(two_sins, backend="lazytrain", options=options)
        with pytest.raises(LoweringError) as info:
            f(x, w)
        message = str(info.value)
        assert "aten.sin.default" in message
        assert f"{THIS_FILE}\", line {line_of('# <- the unlowered op')}" in message, message
        assert "fallback" in message  # says how to run it anyway


class SinMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 8)
        self.b = torch.nn.Linear(8, 3)

    def forward(self, x):
        h = self.a(x)
        h = torch.sin(h) + h  # <- sin in the forward, cos in its backward
        return torch.nn.functional.cross_entropy(self.b(h), torch.arange(x.shape[0]) % 3)


def test_training_through_a_partitioned_graph(without_sin_cos):
    torch.manual_seed(0)
    eager = SinMLP()
    model = copy.deepcopy(eager)
    cmodel = torch.compile(model, backend="lazytrain", options={"fallback": "partition"})
    opt_e = torch.optim.SGD(eager.parameters(), lr=0.1)
    opt_c = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(6, 4)
    before = counter("DynamoFallbackNodes")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step in range(3):
            for m, call, opt in ((eager, eager, opt_e), (model, cmodel, opt_c)):
                opt.zero_grad()
                loss = call(x)
                loss.backward()
                opt.step()
                if m is eager:
                    expected = (loss.item(), [p.grad.clone() for p in m.parameters()])
            assert loss.item() == pytest.approx(expected[0], rel=1e-5, abs=1e-6)
            for g, e in zip((p.grad for p in model.parameters()), expected[1]):
                torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), eager.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
    messages = " ".join(str(c.message) for c in caught)
    assert "aten.sin.default" in messages and "aten.cos.default" in messages  # forward and backward graphs
    assert counter("DynamoFallbackNodes") - before >= 2


# ---------------------------------------------------------------- dynamic shapes, graph breaks


def scaled_sin(x):
    return torch.tanh(x) * x.shape[0]


def test_symints_are_static_values_and_many_signatures_warn():
    f = torch.compile(scaled_sin, backend="lazytrain", dynamic=True, options={"max_different_graphs": 2})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (3, 4, 5, 6, 4):
            x = torch.randn(n, 2)
            torch.testing.assert_close(f(x), scaled_sin(x))
    ours = [str(c.message) for c in caught if "max_different_graphs" in str(c.message)]
    assert len(ours) == 1, ours  # once, when the third signature compiled
    message = ours[0]
    assert "compiled 3 graphs" in message
    # The input that changed, by the user's name, with its old and new shape.
    assert "(x): [4, 2] float32 -> [5, 2] float32" in message, message


def test_no_warning_within_max_different_graphs():
    f = torch.compile(scaled_sin, backend="lazytrain", dynamic=True)  # default 4
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (3, 4, 5, 3, 4):
            f(torch.randn(n, 2))
    assert not [c for c in caught if "max_different_graphs" in str(c.message)]


def item_and_branch(x):
    s = x.sum()
    if s.item() > 0:  # data-dependent control flow: a graph break
        y = x * 2
    else:
        y = x - 1
    return y * x.abs().max().item()  # .item(): another


@pytest.mark.parametrize("dynamic", [False, None])
def test_item_and_data_dependent_control_flow_break_the_graph_correctly(dynamic):
    # dynamic=None (torch.compile's default): a float from .item() that varies
    # becomes a 0-d float64 graph input, which lazytrain takes in float32.
    f = torch.compile(item_and_branch, backend="lazytrain", dynamic=dynamic)
    torch.manual_seed(0)
    for x in (torch.ones(3, 2), -torch.ones(3, 2), torch.randn(3, 2), torch.randn(3, 2) - 1, torch.randn(3, 2)):
        torch.testing.assert_close(f(x), item_and_branch(x))


# ---------------------------------------------------------------- inputs lazytrain cannot take


def add_scaled(x, y):
    return (y + x * 2).sum()


@pytest.mark.parametrize("dtype, match", [
    (torch.float64, "input x: lazytrain has no torch.float64"),
    (torch.complex64, "input x is complex"),
    (torch.uint8, "input x: lazytrain has no torch.uint8"),
])
def test_unsupported_dtype_names_the_input(dtype, match):
    x = torch.ones(3, dtype=dtype)
    with pytest.raises(UnsupportedInput, match=match):
        torch.compile(add_scaled, backend="lazytrain")(x, x)


def test_unsupported_parameter_dtype_names_the_parameter():
    model = torch.nn.Linear(3, 2).double()
    with pytest.raises(UnsupportedInput, match=r"input (fn|self)\.(weight|bias): lazytrain has no torch.float64"):
        torch.compile(model, backend="lazytrain")(torch.ones(4, 3, dtype=torch.float64))


def test_non_cpu_device_names_the_input():
    # No GPU here: the meta device stands for any device that is not the CPU.
    x = torch.ones(3, device="meta")
    with pytest.raises(UnsupportedInput, match="input x is on meta.*CPU"):
        torch.compile(add_scaled, backend="lazytrain")(x, x)


def test_sparse_inputs():
    x, y = torch.eye(3).to_sparse(), torch.randn(3, 3)
    # Dynamo does not trace sparse tensors: without fullgraph the frame runs in
    # torch eager (correct, and lazytrain never sees the sparse tensor) ...
    before = counter("DynamoGraphs")
    torch.testing.assert_close(torch.compile(add_scaled, backend="lazytrain")(x, y), add_scaled(x, y))
    assert counter("DynamoGraphs") == before
    # ... with fullgraph=True it is Dynamo's own error.
    torch._dynamo.reset()
    with pytest.raises(Exception, match="(?i)sparse"):
        torch.compile(add_scaled, backend="lazytrain", fullgraph=True)(x, y)
    # A sparse tensor handed to the backend directly is refused by name.
    from lazytrain.torch_backend._exchange import to_lazytrain

    with pytest.raises(UnsupportedInput, match="input x has layout torch.sparse_coo"):
        to_lazytrain(x, "input x")


# ---- what a first user tried (issue 54's trial): each was wrong or crashed once ----
def constants_inside(x):
    y = x.clone()
    y[:, 0] = 7  # a Python scalar assigned: a tensor constant in the graph (t5, bart)
    return x[..., [-1]] * 2, y, torch.sqrt(torch.tensor(8.0)) * x  # an index list (falcon), torch.tensor (deberta)


def test_tensor_constants_of_the_model_code():
    x = torch.randn(2, 3)
    got = torch.compile(constants_inside, backend="lazytrain", fullgraph=True, dynamic=False)(x)
    for g, want in zip(got, constants_inside(x)):
        torch.testing.assert_close(g, want)


class NonContiguousWeight(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(6, 5).t())  # [5, 6], strides (1, 5): imported by a copy

    def forward(self, x):
        return (x @ self.w.t()).pow(2).mean()


def test_a_write_through_data_to_a_copied_parameter_is_seen():
    """A copied (non-contiguous) import is never cached: `p.data -= ...` bumps
    no version counter, and the next call must read the new values."""
    eager = NonContiguousWeight()
    compiled_module = copy.deepcopy(eager)
    compiled = torch.compile(compiled_module, backend="lazytrain", dynamic=False)
    x = torch.randn(4, 6)
    for _ in range(3):
        for module, call in ((eager, eager), (compiled_module, compiled)):
            call(x).backward()
            module.w.data -= 0.1 * module.w.grad
            module.w.grad = None
        torch.testing.assert_close(compiled(x), eager(x))
    assert counter("DynamoInputCopies") > 0


def test_inference_mode():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    compiled = torch.compile(model, backend="lazytrain", dynamic=False)
    x = torch.randn(3, 8)
    with torch.inference_mode():
        for shift in (0, 1):
            torch.testing.assert_close(compiled(x + shift), model(x + shift))


def padded_conv(x, w):
    return torch.nn.functional.conv2d(x, w, padding=1).relu()


def test_a_convolution_that_is_not_a_patch_one_falls_back_or_says_why(monkeypatch):
    x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    monkeypatch.setenv("LAZYTRAIN_DYNAMO_FALLBACK", "partition")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(padded_conv, backend="lazytrain", dynamic=False)(x, w)
    torch.testing.assert_close(got, padded_conv(x, w))
    assert any("aten.convolution.default" in str(c.message) for c in caught)
    torch._dynamo.reset()
    monkeypatch.setenv("LAZYTRAIN_DYNAMO_FALLBACK", "error")
    with pytest.raises(LoweringError, match=r"only patch convolutions are lowered.*padding \[1, 1\]"):
        torch.compile(padded_conv, backend="lazytrain", dynamic=False)(x, w)


def flip_scaled(x, s):
    return torch.flip(x, [0]) * s


def test_symbolic_sizes_and_python_floats_in_a_partitioned_graph(monkeypatch):
    """dynamic=True: sizes arrive as SymInts with Python arithmetic on them
    (computed on this call's values), and a Python float that changes arrives
    as a 0-d float64 tensor (taken in float32), also around a fallback op."""
    monkeypatch.setenv("LAZYTRAIN_DYNAMO_FALLBACK", "partition")
    monkeypatch.delitem(LOWERINGS, torch.ops.aten.flip.default, raising=False)
    compiled = torch.compile(flip_scaled, backend="lazytrain", dynamic=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rows, s in ((3, 0.5), (4, 0.7), (5, 1.3)):
            x = torch.randn(rows, 2)
            torch.testing.assert_close(compiled(x, s), flip_scaled(x, s))
    mlp = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    compiled_mlp = torch.compile(mlp, backend="lazytrain", dynamic=True)
    for rows in (3, 5, 7):
        x = torch.randn(rows, 8)
        torch.testing.assert_close(compiled_mlp(x), mlp(x))

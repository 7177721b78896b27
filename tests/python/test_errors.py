"""Errors a Python user can act on: lazytrain's errors are LazytrainError (a
RuntimeError) naming the user's Python file and line; Python's own error
types where Python would raise them; nothing takes the interpreter down."""
import subprocess
import sys
import textwrap

import pytest

import lazytrain as lt
import lazytrain.nn as nn


def line_of(marker):
    with open(__file__) as f:
        for number, text in enumerate(f, start=1):
            if marker in text and "line_of(" not in text:
                return number
    raise AssertionError(marker)


def test_shape_error_names_the_python_line():
    a, b = lt.ones(2, 3), lt.ones(4, 5)
    with pytest.raises(lt.LazytrainError) as e:
        a @ b  # MATMUL-LINE
    assert isinstance(e.value, RuntimeError)
    assert "[aten::matmul]" in str(e.value)
    assert f"test_errors.py:{line_of('MATMUL-LINE')}" in str(e.value)


def test_errors_inside_a_module_name_the_users_call():
    layer = nn.Linear(3, 2)
    with pytest.raises(lt.LazytrainError) as e:
        layer(lt.ones(4, 5))  # MODULE-LINE
    assert f"test_errors.py:{line_of('MODULE-LINE')}" in str(e.value), str(e.value)


def test_python_error_types():
    with pytest.raises(TypeError):
        lt.ones(2) + "a"
    with pytest.raises(IndexError):
        lt.ones(2)[5]
    with pytest.raises(ValueError):
        lt.optim.SGD([nn.Parameter(lt.ones(1))], lr=-1.0)
    with pytest.raises(TypeError):
        lt.zeros(2.5)
    with pytest.raises(lt.LazytrainError, match="cpu"):
        lt.device("gpu:0")


def test_anomaly_detection_names_the_line():
    x = lt.tensor([-1.0, 1.0])
    with pytest.raises(lt.LazytrainError) as e:
        with lt.detect_anomaly():
            lt.log(x)  # ANOMALY-LINE
    assert f"test_errors.py:{line_of('ANOMALY-LINE')}" in str(e.value), str(e.value)
    assert not lt.is_anomaly_enabled()


def test_debug_eager_execution_error_names_the_line():
    with lt.execution_mode("debug_eager"):
        w = lt.ones(4, 2)
        with pytest.raises(lt.LazytrainError) as e:
            lt.embedding(w, lt.tensor([7]))  # EMBEDDING-LINE
    assert f"test_errors.py:{line_of('EMBEDDING-LINE')}" in str(e.value), str(e.value)


def test_lazy_index_out_of_range_names_the_ops_line_at_the_read():
    # Lazily the failure surfaces at the read (the traceback's line); the
    # message names the op that failed and the line that recorded it.
    w = lt.ones(4, 2)
    y = lt.embedding(w, lt.tensor([3, 9])) * 2  # LAZY-EMBEDDING-LINE
    with pytest.raises(lt.LazytrainError) as e:
        y.tolist()
    message = str(e.value)
    assert "index 9 is out of range for dimension 0 of size 4" in message, message
    assert f"aten::embedding called from test_errors.py:{line_of('LAZY-EMBEDDING-LINE')}" in message, message


def test_cross_entropy_target_out_of_range_is_an_error_not_another_rows_logit():
    # torch raises "Target 4 is out of bounds"; row 0's target 4 of 4 classes
    # would otherwise read row 1's first logit.
    logits = lt.arange(12).float().reshape(3, 4)
    loss = lt.nn.functional.cross_entropy(logits, lt.tensor([4, 1, 2]))  # TARGET-LINE
    with pytest.raises(lt.LazytrainError) as e:
        loss.item()
    message = str(e.value)
    assert "index 4 is out of range for dimension 0 of size 4" in message, message
    assert f"test_errors.py:{line_of('TARGET-LINE')}" in message, message


def run_python(code):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)


def test_exit_right_after_sync_is_clean():
    r = run_python("""
        import lazytrain as lt
        x = lt.randn(64, 64)
        for _ in range(5):
            x = (x @ x).tanh()
        lt.sync()
    """)
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""


def test_a_failed_execution_raises_and_the_interpreter_lives():
    r = run_python("""
        import lazytrain as lt
        y = lt.embedding(lt.ones(4, 2), lt.tensor([9]))
        lt.sync()
        try:
            y.tolist()
        except lt.LazytrainError as e:
            print("caught", type(e).__name__)
        print("alive", (lt.ones(2) * 3).tolist())
    """)
    assert r.returncode == 0, r.stderr
    assert "caught LazytrainError" in r.stdout and "alive [3.0, 3.0]" in r.stdout


def test_an_unsupported_numpy_dtype_is_named_as_numpy_names_it():
    import numpy as np
    with pytest.raises(TypeError, match=r"from_numpy: unsupported dtype float64; expected float32.*astype\(np.float32\)"):
        lt.from_numpy(np.zeros(3))
    with pytest.raises(TypeError, match=r"unsupported dtype complex64; expected"):
        lt.from_numpy(np.zeros(3, dtype=np.complex64))
    with pytest.raises(TypeError, match=r"unsupported dtype uint16; expected"):
        lt.from_numpy(np.zeros(3, dtype=np.uint16))


def test_a_failed_training_step_keeps_the_parameters_and_momentum():
    # The whole step (forward, backward, SGD with momentum) is recorded before a
    # token id out of range fails it at run time. As torch keeps them (its
    # forward raises before optimizer.step()), the parameters and the momentum
    # buffers keep their values from before the step: training goes on, and
    # reaches exactly the values of a run that never saw the bad batch.
    def run(batches):
        lt.manual_seed(0)
        model = nn.Sequential(nn.Embedding(6, 4), nn.Linear(4, 3))
        opt = lt.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        errors = []
        for ids in batches:
            loss = lt.nn.functional.cross_entropy(model(lt.tensor(ids)), lt.tensor([0, 1, 2]))
            loss.backward()
            opt.step()
            opt.zero_grad()
            lt.mark_step()
            try:
                loss.item()
            except lt.LazytrainError as e:
                errors.append(str(e))
        return {k: v.tolist() for k, v in model.state_dict().items()}, errors

    clean, no_errors = run([[1, 2, 3], [3, 4, 5], [0, 2, 4]])
    assert no_errors == []
    # The bad batch in the middle, and first (before the momentum buffers ever held a value).
    for batches in ([[1, 2, 3], [3, 4, 5], [1, 9, 3], [0, 2, 4]], [[1, 9, 3], [1, 2, 3], [3, 4, 5], [0, 2, 4]]):
        kept, errors = run(batches)
        assert len(errors) == 1 and "index 9 is out of range for dimension 0 of size 6" in errors[0], errors
        assert "keep their values from before it" in errors[0], errors[0]
        assert kept == clean

"""Errors a user causes have torch's exception type and name the user's file
and line, as the shape errors do: dimension out of range (IndexError), the
everyday autograd and tensor errors (RuntimeError), and assigning a .grad of
another size or dtype (RuntimeError)."""
import os

import pytest

import lazytrain as lt

torch = pytest.importorskip("torch")

ME = os.path.basename(__file__)


def raised(fn):
    """The exception fn() raises (fails when it raises none)."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (compared by the caller)
        return e
    raise AssertionError("no exception")


def line_of(marker):
    with open(__file__) as f:
        for number, text in enumerate(f, start=1):
            if marker in text and "line_of(" not in text:
                return number
    raise AssertionError(marker)


DIM_CASES = {
    "squeeze": lambda m: m.ones(2, 3).squeeze(3),
    "unsqueeze": lambda m: m.ones(2, 3).unsqueeze(4),
    "transpose": lambda m: m.ones(2, 3).transpose(0, 2),
    "sum": lambda m: m.ones(2, 3).sum(3),
    "softmax": lambda m: m.ones(2, 3).softmax(2),
    "gather": lambda m: m.ones(2, 3).gather(5, m.tensor([[0]])),
    "negative": lambda m: m.ones(2, 3).sum(-3),
}


@pytest.mark.parametrize("name", sorted(DIM_CASES))
def test_dimension_out_of_range_is_index_error_naming_the_line(name):
    ours, theirs = raised(lambda: DIM_CASES[name](lt)), raised(lambda: DIM_CASES[name](torch))
    assert type(theirs) is IndexError
    assert isinstance(ours, IndexError) and not isinstance(ours, RuntimeError), type(ours)
    assert "Dimension out of range" in str(ours) and "Dimension out of range" in str(theirs)
    # torch's range and value, e.g. "(expected to be in range of [-2, 1], but got 3)".
    assert str(theirs).split("Dimension out of range")[1][:45] in str(ours), (str(ours), str(theirs))
    assert f"(called from {ME}:" in str(ours), str(ours)


def test_dimension_error_names_the_callers_line():
    x = lt.ones(2, 3)
    e = raised(lambda: x.squeeze(5))  # marker: squeeze line
    assert f"(called from {ME}:{line_of('marker: squeeze line')})" in str(e), str(e)


def everyday_errors(m):
    w = m.tensor([1.0, 2.0], requires_grad=True)

    def twice():
        loss = (w * w).sum()
        loss.backward()
        loss.backward()

    return {
        "backward twice": twice,
        "backward non-scalar": lambda: (w * 2).backward(),
        "backward without grad": lambda: m.ones(2).sum().backward(),
        "item of 2 elements": lambda: w.item(),
        "dropout p": lambda: m.dropout(w, 1.5) if m is lt else torch.dropout(w, 1.5, True),
        ".data of another shape": lambda: setattr(w, "data", m.ones(3)),
        "requires_grad_ on int": lambda: m.tensor([1]).requires_grad_(),
        "to unknown device": lambda: w.to("nodevice"),
    }


def test_everyday_errors_have_torchs_type_and_name_the_line():
    ours, theirs = everyday_errors(lt), everyday_errors(torch)
    for name in ours:
        mine = raised(ours[name])
        try:
            theirs[name]()
            their_type = None  # (torch without CUDA may still raise; checked below when it does)
        except Exception as e:  # noqa: BLE001
            their_type = type(e)
        if their_type is not None:
            assert isinstance(mine, their_type), (name, type(mine), their_type)
        assert isinstance(mine, RuntimeError), (name, type(mine))
        assert f"(called from {ME}:" in str(mine), (name, str(mine))


def test_backward_twice_names_the_line_of_the_second_backward():
    w = lt.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * w).sum()
    loss.backward()
    e = raised(lambda: loss.backward())  # marker: second backward
    assert f"{ME}:{line_of('marker: second backward')}" in str(e), str(e)


def grad_assignments(m):
    w = m.ones(3, requires_grad=True)
    return {
        "size": lambda: setattr(w, "grad", m.ones(2)),
        "rank": lambda: setattr(w, "grad", m.ones(1, 3)),
        "dtype": lambda: setattr(w, "grad", m.tensor([1, 2, 3])),
    }


def test_assigning_a_grad_of_another_size_or_dtype_raises_as_torch():
    ours, theirs = grad_assignments(lt), grad_assignments(torch)
    for name in ours:
        mine, their = raised(ours[name]), raised(theirs[name])
        assert type(their) is RuntimeError
        assert isinstance(mine, RuntimeError), (name, type(mine))
        assert "attempting to assign a gradient" in str(mine) and "attempting to assign a gradient" in str(their)
        assert f"(called from {ME}:" in str(mine), str(mine)
    # A grad of the same size and dtype, and None, are fine; an int tensor takes an int grad, as torch.
    w = lt.ones(3, requires_grad=True)
    w.grad = lt.full((3,), 2.0)
    assert w.grad.tolist() == [2.0, 2.0, 2.0]
    w.grad = None
    assert w.grad is None
    i = lt.tensor([1, 2])
    i.grad = lt.tensor([3, 4])
    assert i.grad.tolist() == [3, 4]


def test_execution_errors_keep_their_message_on_every_read():
    # A failed graph names the op's line; a second read says the same (no read line added).
    emb = lt.nn.Embedding(5, 3)
    lt.sync()
    h = emb(lt.tensor([1, 7]))
    first, again = str(raised(lambda: h.tolist())), str(raised(lambda: h.tolist()))
    assert first == again and "aten::embedding" in first

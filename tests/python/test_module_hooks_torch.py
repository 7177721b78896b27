"""Module hooks (forward pre-hooks, forward hooks, full backward hooks and their
handles), re-assigned parameters' state_dict order and tied weights after
.to(dtype), against torch.nn in the test itself."""
import numpy as np
import pytest

import lazytrain as lt

torch = pytest.importorskip("torch")

W = np.array([[0.5, -1.0, 2.0], [0.25, 1.5, -0.75]], dtype=np.float32)
B = np.array([0.1, -0.2], dtype=np.float32)
X = np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]], dtype=np.float32)


def linear(m):
    layer = m.nn.Linear(3, 2)
    layer.weight = m.nn.Parameter(m.tensor(W))
    layer.bias = m.nn.Parameter(m.tensor(B))
    return layer


def as_list(v):
    if v is None:
        return None
    if isinstance(v, (tuple, list)):
        return [as_list(x) for x in v]
    return np.round(v.detach().numpy().astype(np.float64), 5).tolist()


def forward_hooks(m):
    layer, log = linear(m), []
    layer.register_forward_pre_hook(lambda mod, args: log.append(("pre", as_list(args))))
    layer.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    layer.register_forward_pre_hook(lambda mod, args: log.append(("first", as_list(args))), prepend=True)
    h = layer.register_forward_hook(lambda mod, args, out: log.append(("never", None)))
    layer.register_forward_hook(lambda mod, args, out: (log.append(("post", as_list(args), as_list(out))), out + 1)[1])
    layer.register_forward_hook(lambda mod, args, kwargs, out: log.append(("kw", sorted(kwargs), as_list(out))), with_kwargs=True)
    h.remove()
    out = layer(m.tensor(X))
    return log, as_list(out)


def test_forward_hooks_order_values_and_remove_match_torch():
    assert forward_hooks(lt) == forward_hooks(torch)


def backward_hooks(m, input_requires_grad):
    layer, log = linear(m), []

    def hook(mod, grad_input, grad_output):
        log.append(("full", as_list(grad_input), as_list(grad_output)))

    layer.register_full_backward_hook(hook)
    layer.register_full_backward_pre_hook(lambda mod, grad_output: log.append(("pre", as_list(grad_output))))
    x = m.tensor(X, requires_grad=input_requires_grad)
    out = layer(x)
    (out * m.tensor(np.array([[1.0, 2.0], [3.0, -1.0]], dtype=np.float32))).sum().backward()
    return log, as_list(layer.weight.grad), as_list(x.grad)


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")  # torch's note for inputs without grad
@pytest.mark.parametrize("input_requires_grad", [True, False])
def test_full_backward_hook_sees_torchs_grad_input_and_grad_output(input_requires_grad):
    assert backward_hooks(lt, input_requires_grad) == backward_hooks(torch, input_requires_grad)


def test_full_backward_hook_may_replace_grad_input_as_torch():
    def run(m):
        layer = linear(m)
        layer.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 0.5,))
        x = m.tensor(X, requires_grad=True)
        layer(x).sum().backward()
        return as_list(x.grad), as_list(layer.weight.grad)
    assert run(lt) == run(torch)


def tied(nn, dtype):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.head = nn.Linear(4, 10)
            self.head.weight = self.emb.weight
    model = M()
    keys = list(model.state_dict())
    model = model.to(dtype)
    return keys, model.head.weight is model.emb.weight, len(list(model.parameters())), model.head.weight.dtype == dtype


def test_reassigned_parameter_keeps_its_place_and_to_dtype_keeps_ties():
    assert tied(lt.nn, lt.bfloat16) == tied(torch.nn, torch.bfloat16)


def test_reassigned_submodule_and_buffer_keep_their_place():
    def keys(nn, m):
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(2, 2)
                self.register_buffer("s", m.zeros(1))
                self.b = nn.Linear(2, 2)
                self.register_buffer("t", m.zeros(1))
                self.a = nn.Linear(2, 2)
                self.s = m.ones(1)
        return list(M().state_dict())
    assert keys(lt.nn, lt) == keys(torch.nn, torch)

"""lazytrain.optim against torch.optim in the test itself: per-parameter step
counts (late-starting parameters), per-group hyper-parameters, amsgrad and
maximize, state_dict / load_state_dict in torch's format both ways,
add_param_group."""
import numpy as np
import pytest

import lazytrain as lt

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
INIT = [RNG.standard_normal((4, 3)).astype(np.float32), RNG.standard_normal(3).astype(np.float32),
        RNG.standard_normal(2).astype(np.float32)]
GRADS = [[RNG.standard_normal(a.shape).astype(np.float32) for a in INIT] for _ in range(6)]
# Which parameters get a gradient at each step: the second starts at step 2, the third skips steps.
HAS_GRAD = [(1, 0, 1), (1, 0, 0), (1, 1, 1), (1, 1, 0), (1, 1, 1), (0, 1, 1)]


def run(m, make, steps=6, groups=None):
    params = [m.tensor(a, requires_grad=True) for a in INIT]
    opt = make(m, params if groups is None else groups(params))
    for k in range(steps):
        for p, g, has in zip(params, GRADS[k], HAS_GRAD[k]):
            p.grad = m.tensor(g) if has else None
        opt.step()
    return [p.detach().numpy() for p in params], opt


def assert_params_close(a, b, atol=2e-6):
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=atol)


ADAMW_CONFIGS = [
    dict(lr=0.1, weight_decay=0.0),
    dict(lr=0.05, weight_decay=0.1, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=0.1, weight_decay=0.01, amsgrad=True),
    dict(lr=0.1, weight_decay=0.01, maximize=True),
]


@pytest.mark.parametrize("config", ADAMW_CONFIGS)
def test_adamw_counts_steps_per_parameter_as_torch(config):
    got, opt = run(lt, lambda m, ps: m.optim.AdamW(ps, **config))
    want, topt = run(torch, lambda m, ps: m.optim.AdamW(ps, **config))
    assert_params_close(got, want)
    steps = {i: float(s["step"]) for i, s in opt.state_dict()["state"].items()}
    assert steps == {i: float(s["step"]) for i, s in topt.state_dict()["state"].items()}
    assert steps == {0: 5.0, 1: 4.0, 2: 4.0}


def test_adamw_groups_have_their_own_hyper_parameters():
    def groups(ps):
        return [{"params": [ps[0]], "lr": 0.02, "betas": (0.5, 0.9)}, {"params": ps[1:], "weight_decay": 0.0, "amsgrad": True}]
    got, _ = run(lt, lambda m, ps: m.optim.AdamW(ps, lr=0.1), groups=groups)
    want, _ = run(torch, lambda m, ps: m.optim.AdamW(ps, lr=0.1), groups=groups)
    assert_params_close(got, want)


@pytest.mark.parametrize("config", [dict(lr=0.1, momentum=0.9, dampening=0.3), dict(lr=0.1, momentum=0.9, nesterov=True,
                                                                                   weight_decay=0.1)])
def test_sgd_first_momentum_step_is_per_parameter_as_torch(config):
    got, _ = run(lt, lambda m, ps: m.optim.SGD(ps, **config))
    want, _ = run(torch, lambda m, ps: m.optim.SGD(ps, **config))
    assert_params_close(got, want)


def test_adamw_state_dict_has_torchs_format():
    _, opt = run(lt, lambda m, ps: m.optim.AdamW(ps, lr=0.1, amsgrad=True), steps=2)
    _, topt = run(torch, lambda m, ps: m.optim.AdamW(ps, lr=0.1, amsgrad=True), steps=2)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    assert list(sd["state"]) == list(tsd["state"]) == [0, 2]  # the second parameter has no state yet
    for i in tsd["state"]:
        assert list(sd["state"][i]) == list(tsd["state"][i])
        for key, value in tsd["state"][i].items():
            np.testing.assert_allclose(sd["state"][i][key].numpy(), value.numpy(), rtol=1e-5, atol=1e-7)
            assert sd["state"][i][key].shape == tuple(value.shape)
    p = opt.param_groups[0]["params"][0]
    assert opt.state[p] is not None and set(opt.state[p]) == {"step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"}


def _to_torch(sd):
    return {"state": {i: {k: torch.from_numpy(np.array(v.numpy())) for k, v in s.items()} for i, s in sd["state"].items()},
            "param_groups": sd["param_groups"]}


@pytest.mark.parametrize("name, config", [("AdamW", dict(lr=0.1, amsgrad=True)), ("SGD", dict(lr=0.1, momentum=0.9))])
def test_state_dict_round_trips_through_torch(name, config):
    # lazytrain trains 3 steps, torch resumes from its state_dict, and the reverse; both end where one run ends.
    want, _ = run(torch, lambda m, ps: getattr(m.optim, name)(ps, **config), steps=6)

    def resume(first, second):
        params1 = [first.tensor(a, requires_grad=True) for a in INIT]
        opt1 = getattr(first.optim, name)(params1, **config)
        for k in range(3):
            for p, g, has in zip(params1, GRADS[k], HAS_GRAD[k]):
                p.grad = first.tensor(g) if has else None
            opt1.step()
        sd = opt1.state_dict()
        if first is lt:
            sd = _to_torch(sd)
        params2 = [second.tensor(np.array(p.detach().numpy()), requires_grad=True) for p in params1]
        opt2 = getattr(second.optim, name)(params2, lr=123.0)
        opt2.load_state_dict(sd)
        assert opt2.param_groups[0]["lr"] == config["lr"]
        for k in range(3, 6):
            for p, g, has in zip(params2, GRADS[k], HAS_GRAD[k]):
                p.grad = second.tensor(g) if has else None
            opt2.step()
        return [p.detach().numpy() for p in params2]

    assert_params_close(resume(lt, torch), want)
    assert_params_close(resume(torch, lt), want)


def test_load_state_dict_checks_groups_as_torch():
    w = lt.ones(2, requires_grad=True)
    opt = lt.optim.AdamW([w])
    sd = opt.state_dict()
    other = lt.optim.AdamW([lt.ones(2, requires_grad=True), lt.ones(1, requires_grad=True)])
    with pytest.raises(ValueError, match="doesn't match the size"):
        other.load_state_dict(sd)
    two = lt.optim.AdamW([{"params": [lt.ones(1, requires_grad=True)]}, {"params": [lt.ones(1, requires_grad=True)]}])
    with pytest.raises(ValueError, match="different number of parameter groups"):
        two.load_state_dict(sd)


def test_add_param_group_as_torch():
    for m in (lt, torch):
        w, b = m.ones(2, requires_grad=True), m.ones(1, requires_grad=True)
        opt = m.optim.AdamW([w], lr=0.1, weight_decay=0.0)
        opt.add_param_group({"params": b, "lr": 0.5})
        assert opt.param_groups[1]["lr"] == 0.5 and opt.param_groups[1]["betas"] == (0.9, 0.999)
        assert opt.param_groups[1]["params"][0] is b
        with pytest.raises(ValueError, match="more than one parameter group"):
            opt.add_param_group({"params": [w]})
        with pytest.raises(TypeError, match="ordered collections"):
            opt.add_param_group({"params": {m.ones(1, requires_grad=True)}})
        w.grad, b.grad = m.ones(2), m.ones(1)
        opt.step()
        if m is lt:
            got = (w.detach().numpy(), b.detach().numpy())
        else:
            np.testing.assert_allclose(got[0], w.detach().numpy(), rtol=1e-6)
            np.testing.assert_allclose(got[1], b.detach().numpy(), rtol=1e-6)


def test_constructor_errors_are_torchs():
    w = lt.ones(2, requires_grad=True)
    for bad, match in ((dict(lr=-1.0), "Invalid learning rate"), (dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0"),
                       (dict(eps=-1.0), "Invalid epsilon value"), (dict(weight_decay=-0.1), "Invalid weight_decay value")):
        with pytest.raises(ValueError, match=match):
            lt.optim.AdamW([w], **bad)
        with pytest.raises(ValueError, match=match):
            torch.optim.AdamW([torch.ones(2, requires_grad=True)], **bad)
    with pytest.raises(TypeError, match="iterable of Tensors"):
        lt.optim.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        lt.optim.SGD([], lr=0.1)


def test_a_training_loop_compiles_once_with_a_late_parameter():
    # The step count and bias corrections are device data: steps 3.. reuse one graph.
    w, b = lt.ones(3, requires_grad=True), lt.ones(3, requires_grad=True)
    opt = lt.optim.AdamW([w, b], lr=0.1)
    counts = []
    for k in range(5):
        opt.zero_grad()
        loss = (w * w).sum() + ((b * b).sum() if k >= 1 else 0.0)
        loss.backward()
        opt.step()
        lt.sync()
        counts.append(lt.debug.metrics.counter_value("UncachedCompile") or 0)
    assert counts[2] == counts[3] == counts[4]

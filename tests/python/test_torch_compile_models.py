"""torch.compile(model, backend="lazytrain") on unmodified transformers models
(issue 54), as transformers' own test_torch_compile_for_training checks it:
tiny random BERT, RoBERTa, GPT-2 and Llama, attention "sdpa" and "eager",
loss and every gradient within 1e-4 of eager, 5 AdamW steps (with gradient
clipping) with the same losses and final parameters within 2e-4, inference
logits, one forward and one backward graph with no recompile after step 1,
and bf16 autocast close to eager autocast.

Each (model, attention) pair is trained once in a module-scoped fixture; the
tests check what it recorded. The tests' fallback is "error": an op without a
lowering fails here instead of running in torch eager.
"""
import copy
import os

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (the torch_backend tests need torch==2.13.0)")
transformers = pytest.importorskip("transformers", reason="transformers is not installed (pinned at 5.23.0)")

import lazytrain.torch_backend  # noqa: E402,F401  (registers backend "lazytrain")
from lazytrain.debug import metrics  # noqa: E402

os.environ["LAZYTRAIN_DYNAMO_FALLBACK"] = "error"



def _compiles():
    """Graphs lazytrain compiled or took from its compile cache: an identical
    graph from an earlier test (xlm_roberta's is roberta's) is a cache hit."""
    return metrics.counter_value("UncachedCompile") + metrics.counter_value("CachedCompile")


def counter(name):
    return metrics.counter_value(name)


VOCAB, SEQ, BATCH, STEPS = 99, 10, 2, 5
TOL = dict(rtol=1e-4, atol=1e-4)
PARAM_TOL = dict(rtol=2e-4, atol=2e-4)
ARCHS = ["bert", "roberta", "gpt2", "llama"]
ATTNS = ["sdpa", "eager"]
# bf16 autocast on one model with layer norm and GELU and one with RMS norm,
# SiLU and rotary embeddings (GPT-2 and RoBERTa add no other op; kept out for time).
AUTOCAST_ARCHS = ["bert", "llama"]


def make_model(arch, attn):
    common = dict(vocab_size=VOCAB, max_position_embeddings=64, attn_implementation=attn)
    if arch in ("bert", "roberta"):
        cls = transformers.BertConfig if arch == "bert" else transformers.RobertaConfig
        cfg = cls(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **common)
        model_cls = transformers.BertForMaskedLM if arch == "bert" else transformers.RobertaForMaskedLM
        model, kwargs = model_cls(cfg), {}
    elif arch == "gpt2":
        cfg = transformers.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
                                      eos_token_id=0, attn_implementation=attn)
        model, kwargs = transformers.GPT2LMHeadModel(cfg), {"use_cache": False}
        # Under fullgraph=True, transformers' logger.warning_once about an unset
        # loss_type would break the graph.
        model.loss_type = "ForCausalLM"
    else:
        cfg = transformers.LlamaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                       num_key_value_heads=2, intermediate_size=37, **common)
        model, kwargs = transformers.LlamaForCausalLM(cfg), {"use_cache": False}
    return model, kwargs


def make_batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(2, VOCAB, (BATCH, SEQ), generator=g)
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    mask[1, 7:] = 0  # the second sequence is padded
    labels = ids.masked_fill(mask == 0, -100)
    return dict(input_ids=ids, attention_mask=mask, labels=labels)


def compiled(model):
    return torch.compile(model, backend="lazytrain", fullgraph=True, dynamic=False, options={"fallback": "error"})


def train(model, call, batch, kwargs, steps, after_first=None):
    """`steps` AdamW steps with gradient clipping; returns (losses, first step's
    grads). after_first() runs after step 1 and returns a context for the rest."""
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses, grads = [], None
    ctx = None
    try:
        for step in range(steps):
            opt.zero_grad(set_to_none=True)
            loss = call(**batch, **kwargs).loss
            loss.backward()
            if step == 0:
                grads = {n: None if p.grad is None else p.grad.detach().clone() for n, p in model.named_parameters()}
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
            if step == 0 and after_first is not None:
                ctx = after_first()
                ctx.__enter__()
    finally:
        if ctx is not None:
            ctx.__exit__(None, None, None)
    return losses, grads


class Run:
    """What one (model, attention) pair recorded, eager and lazytrain."""


@pytest.fixture(scope="module", params=[(a, m) for a in ARCHS for m in ATTNS], ids=lambda p: f"{p[0]}-{p[1]}")
def run(request):
    arch, attn = request.param
    torch._dynamo.reset()
    torch.manual_seed(0)
    eager, kwargs = make_model(arch, attn)
    model = copy.deepcopy(eager)
    batch = make_batch()
    r = Run()
    r.arch, r.attn = arch, attn
    r.initial = {n: p.detach().clone() for n, p in eager.named_parameters()}

    r.eager_losses, r.eager_grads = train(eager, eager, batch, kwargs, STEPS)

    cmodel = compiled(model)
    graphs0, uncached0 = counter("DynamoGraphs"), _compiles()
    marks = {}

    def after_first():
        marks["graphs"] = counter("DynamoGraphs") - graphs0
        marks["uncached"] = _compiles()
        return torch.compiler.set_stance("fail_on_recompile")

    r.losses, r.grads = train(model, cmodel, batch, kwargs, STEPS, after_first)
    r.first_step_graphs = marks["graphs"]
    r.graphs_after_warmup = counter("DynamoGraphs") - graphs0 - marks["graphs"]
    r.uncached_warmup = marks["uncached"] - uncached0
    r.uncached_after_warmup = _compiles() - marks["uncached"]
    r.eager_params = dict(eager.named_parameters())
    r.params = dict(model.named_parameters())

    # Inference: eval + no_grad, the compiled model's parameters set to eager's
    # (in place: the backend must see their new values).
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(r.eager_params[n])
    eager.eval()
    model.eval()
    infer_batch = {k: v for k, v in batch.items() if k != "labels"}
    before = counter("DynamoGraphs")
    with torch.no_grad():
        r.eager_logits = eager(**infer_batch, **kwargs).logits
        r.logits = cmodel(**infer_batch, **kwargs).logits
        r.logits_again = cmodel(**infer_batch, **kwargs).logits
    r.inference_graphs = counter("DynamoGraphs") - before
    yield r
    torch._dynamo.reset()


@pytest.fixture(scope="module", params=AUTOCAST_ARCHS)
def autocast_run(request):
    """bf16 autocast forward and backward, eager and lazytrain (attention sdpa)."""
    arch = request.param
    torch._dynamo.reset()
    torch.manual_seed(0)
    eager, kwargs = make_model(arch, "sdpa")
    model = copy.deepcopy(eager)
    batch = make_batch()
    cmodel = compiled(model)
    out = {}
    before = counter("DynamoGraphs")
    for name, m, call in (("eager", eager, eager), ("lazytrain", model, cmodel)):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = call(**batch, **kwargs).loss
        loss.backward()
        out[name] = (loss.detach().float(), {n: p.grad for n, p in m.named_parameters()})
    out["graphs"] = counter("DynamoGraphs") - before
    yield out
    torch._dynamo.reset()


def _close(actual, expected, what, tol):
    torch.testing.assert_close(actual, expected, **tol, msg=lambda m: f"{what}: {m}")


def test_loss_and_every_gradient_match_eager(run):
    _close(torch.tensor(run.losses[0]), torch.tensor(run.eager_losses[0]), "loss", TOL)
    assert set(run.grads) == set(run.eager_grads)
    checked = 0
    for name, expected in run.eager_grads.items():
        actual = run.grads[name]
        assert (actual is None) == (expected is None), f"{name}: gradient presence differs"
        if expected is not None:
            _close(actual, expected, f"grad of {name}", TOL)
            checked += 1
    assert checked == len(run.eager_grads), "every parameter has a gradient"


def test_adamw_steps_match_eager(run):
    _close(torch.tensor(run.losses), torch.tensor(run.eager_losses), "losses over 5 AdamW steps", PARAM_TOL)
    moved = 0
    for name, expected in run.eager_params.items():
        _close(run.params[name].detach(), expected.detach(), f"{name} after 5 steps", PARAM_TOL)
        moved += not torch.equal(expected.detach(), run.initial[name])
    assert moved > 0


def test_one_forward_and_one_backward_graph_and_no_recompile(run):
    assert run.first_step_graphs == 2, "step 1 lowers one forward and one backward graph"
    # fail_on_recompile was set after step 1: a Dynamo recompile would have raised.
    assert run.graphs_after_warmup == 0
    assert run.uncached_warmup > 0, "lazytrain compiled (or found in its cache) the graphs of step 1"
    assert run.uncached_after_warmup == 0, "steps 2-5 replay step 1's executables: nothing compiled or looked up"


def test_inference_logits_match_eager(run):
    assert run.inference_graphs == 1, "eval under no_grad lowers one inference graph"
    _close(run.logits, run.eager_logits, "logits", TOL)
    _close(run.logits_again, run.eager_logits, "logits (second call)", TOL)


def test_bf16_autocast_forward_and_backward(autocast_run):
    assert autocast_run["graphs"] == 2
    loss, grads = autocast_run["lazytrain"]
    eager_loss, eager_grads = autocast_run["eager"]
    assert torch.isfinite(loss)
    _close(loss, eager_loss, "bf16 autocast loss", dict(rtol=2e-2, atol=2e-2))
    for name, expected in eager_grads.items():
        actual = grads[name]
        assert actual is not None and actual.dtype == expected.dtype, name
        assert torch.isfinite(actual).all(), name
        # bf16 rounding: compare by norm, loosely.
        err = (actual.float() - expected.float()).norm() / expected.float().norm().clamp_min(1e-6)
        assert err < 0.1, f"grad of {name} under bf16 autocast: relative error {err:.3g}"

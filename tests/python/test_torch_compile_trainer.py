"""transformers.Trainer unchanged, compiled by lazytrain (issue 54, item 6):
`TrainingArguments(torch_compile=True, torch_compile_backend="lazytrain")`
trains a tiny random BertForMaskedLM and LlamaForCausalLM and evaluates them
with the losses the eager Trainer logs for the same seed and data, every
logging step, within 1e-4 (f32).

The path: the Trainer hands the backend's name to accelerate
(`TorchDynamoPlugin(backend=...)`, checked against accelerate's DynamoBackend
enum: importing lazytrain.torch_backend adds LAZYTRAIN to it), and
`Accelerator.prepare` wraps the model in `torch.compile(model,
backend="lazytrain")`. One Dynamo frame for training and one for evaluation,
no graph break, no recompile per step, no op in torch eager
(LAZYTRAIN_DYNAMO_FALLBACK=error).

Needs torch, transformers and accelerate (python/requirements-interop.txt);
skipped with the reason where they are not installed."""
import math

import pytest

import lazytrain.debug.metrics as met

torch = pytest.importorskip("torch", reason="needs torch (pip install -r python/requirements-interop.txt)")
transformers = pytest.importorskip("transformers", reason="needs transformers (pip install -r python/requirements-interop.txt)")
pytest.importorskip("accelerate", reason="transformers.Trainer needs accelerate (pip install -r python/requirements-interop.txt)")


import lazytrain.torch_backend  # noqa: E402  registers backend="lazytrain" with Dynamo and accelerate

VOCAB, SEQ = 99, 16


def bert():
    return transformers.BertForMaskedLM(transformers.BertConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=37,
        max_position_embeddings=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))


def llama():
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=37, max_position_embeddings=64, attention_dropout=0.0, use_cache=False))


def examples(masked, n, seed):
    """n rows of random ids; MLM labels keep ~30% of the positions (the rest
    -100), CLM labels are the ids; the last rows pad (attention_mask 0)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (n, SEQ), generator=g)
    labels = ids.clone()
    if masked:
        labels[torch.rand(ids.shape, generator=g) >= 0.3] = -100
    mask = torch.ones_like(ids)
    mask[n // 2:, SEQ - 3:] = 0
    labels[mask == 0] = -100
    return [{"input_ids": i, "attention_mask": m, "labels": lab} for i, m, lab in zip(ids, mask, labels)]


def arguments(out, **compile_args):
    return transformers.TrainingArguments(
        output_dir=str(out), use_cpu=True, report_to=[], save_strategy="no", max_steps=6, logging_steps=1,
        per_device_train_batch_size=4, per_device_eval_batch_size=4, learning_rate=1e-3, seed=0,
        dataloader_num_workers=0, disable_tqdm=True, **compile_args)


def train_and_evaluate(make_model, masked, out, **compile_args):
    """The logged training steps, and the eval loss of the trained model
    twice: from the training Trainer's evaluate() (transformers runs it on
    trainer.model, the module torch.compile wrapped: eager on one device) and
    from a new Trainer's evaluate() on the trained weights (which prepares, so
    compiles, the model for evaluation)."""
    transformers.set_seed(0)
    model = make_model()
    trainer = transformers.Trainer(model=model, args=arguments(out / "train", **compile_args),
                                   train_dataset=examples(masked, 16, 1), eval_dataset=examples(masked, 8, 2))
    trainer.train()
    after_training = trainer.evaluate()["eval_loss"]
    steps = [e for e in trainer.state.log_history if "loss" in e]
    trained = make_model()  # trainer.model is marked prepared by accelerate: a new module to be compiled again
    trained.load_state_dict(trainer.model.state_dict())
    evaluator = transformers.Trainer(model=trained, args=arguments(out / "eval", **compile_args),
                                     eval_dataset=examples(masked, 8, 2))
    evaluated = evaluator.evaluate()["eval_loss"]
    return trainer, evaluator, steps, after_training, evaluated


@pytest.mark.parametrize("make_model,masked", [(bert, True), (llama, False)], ids=["bert_mlm", "llama_clm"])
def test_trainer_with_torch_compile_logs_the_eager_losses(tmp_path, monkeypatch, make_model, masked):
    monkeypatch.setenv("LAZYTRAIN_DYNAMO_FALLBACK", "error")
    _, _, eager_steps, eager_after, eager_evaluated = train_and_evaluate(make_model, masked, tmp_path / "eager")

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    met.clear_all()
    trainer, evaluator, steps, after, evaluated = train_and_evaluate(
        make_model, masked, tmp_path / "lazytrain", torch_compile=True, torch_compile_backend="lazytrain")

    assert type(trainer.model_wrapped).__name__ == "OptimizedModule", type(trainer.model_wrapped)
    assert type(evaluator.model_wrapped).__name__ == "OptimizedModule", type(evaluator.model_wrapped)
    assert [e["step"] for e in steps] == [e["step"] for e in eager_steps] == [1, 2, 3, 4, 5, 6]
    for got, want in zip(steps, eager_steps):
        assert math.isfinite(got["loss"])
        assert got["loss"] == pytest.approx(want["loss"], rel=1e-4, abs=1e-4), (steps, eager_steps)
        assert got["grad_norm"] == pytest.approx(want["grad_norm"], rel=1e-4, abs=1e-4), (steps, eager_steps)
        assert got["learning_rate"] == want["learning_rate"]
    assert after == pytest.approx(eager_after, rel=1e-4, abs=1e-4)
    assert evaluated == pytest.approx(eager_evaluated, rel=1e-4, abs=1e-4)
    assert evaluated == pytest.approx(after, rel=1e-4, abs=1e-4)  # the same weights, compiled and eager

    stats = torch._dynamo.utils.counters
    assert not stats["graph_break"], dict(stats["graph_break"])
    # Dynamo frames: the training step's, then the evaluator's (no recompile per step).
    assert stats["stats"]["unique_graphs"] == 2, dict(stats["stats"])
    # lazytrain graphs: forward and backward for training, one for inference; no op ran in torch eager.
    assert met.counter_value("DynamoGraphs") == 3, {n: met.counter_value(n) for n in met.counter_names()}
    assert not met.counter_value("DynamoFallbackNodes")


def test_trainer_accepts_the_backend_name():
    """accelerate's TorchDynamoPlugin, as the Trainer builds it, takes "lazytrain"
    and hands torch.compile the name back."""
    from accelerate.utils import DynamoBackend, TorchDynamoPlugin

    plugin = TorchDynamoPlugin(backend="lazytrain")
    assert plugin.backend == DynamoBackend.LAZYTRAIN and "LAZYTRAIN" in DynamoBackend
    assert plugin.to_kwargs()["backend"] == "lazytrain"
    assert "lazytrain" in torch._dynamo.list_backends(exclude_tags=())


def test_compiling_a_graph_keeps_torch_num_threads():
    """Compiling a lazytrain graph gives oneDNN lazytrain's thread count and
    then puts the caller's OpenMP count back: torch shares libgomp, and its
    get_num_threads() is global state Dynamo guards (a change recompiles)."""
    threads = torch.get_num_threads()
    other = 1 if threads != 1 else 2
    torch.set_num_threads(other)
    try:
        f = torch.compile(lambda x: (x * 3 + 1).sum(), backend="lazytrain", dynamic=False)
        f(torch.arange(7.0))
        assert torch.get_num_threads() == other
    finally:
        torch.set_num_threads(threads)

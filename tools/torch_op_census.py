#!/usr/bin/env python3
"""ATen op census of `transformers` models under torch.compile (issue 54, item 3).

A recording backend (aot_autograd with lazytrain's decomposition table; the
forward and backward compilers tally the `target` of every call_function node
and run the graph unchanged) is run over tiny random configurations of
`transformers` architectures, in four modes each:

  train/sdpa, train/eager   model.train(), labels, loss.backward()
  eval/sdpa,  eval/eager    model.eval(), torch.no_grad(), no labels (logits)

with `attn_implementation` "sdpa" / "eager" (a mode the class does not support
is recorded as unsupported), `use_cache=False` where the model has a cache,
every dropout probability 0, `torch.compile(model, backend=..., dynamic=False,
fullgraph=True)`. When fullgraph=True fails (a graph break), the error is
recorded and the mode is run again with fullgraph=False, which gives the ops
and the graph-break reasons (torch._dynamo's counters).

  /tmp/ltpy tools/torch_op_census.py             writes tests/python/data/torch_op_census.json
  /tmp/ltpy tools/torch_op_census.py --check     compares with the checked-in file, exit 1 on a difference
  /tmp/ltpy tools/torch_op_census.py --only bert,gpt2 [--check]   a subset (debugging)
  /tmp/ltpy tools/torch_op_census.py --out FILE  writes elsewhere
  /tmp/ltpy tools/torch_op_census.py --markdown  prints the docs table from the checked-in file

No weights or hub access: every model is built from a config with random
parameters (seeded). The output is deterministic for a given torch and
transformers (their versions are stored in the file; a bump that changes an op
set makes --check and tests/python/test_torch_op_census.py fail).

Workarounds applied (and stored per architecture under "workarounds"):
  - model.loss_type set where transformers cannot infer it from the class name
    (GPT2LMHeadModel: otherwise `loss_function` calls logger.warning_once, an
    untraceable call, which breaks the graph under fullgraph=True).
"""
import argparse
import difflib
import json
import operator
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DEFAULT_OUT = os.path.join(ROOT, "tests", "python", "data", "torch_op_census.json")
if __name__ == "__main__":  # run as a script from a source tree: its package (imported by a test, the test's)
    sys.path.insert(0, os.path.join(ROOT, "python"))

BATCH, SEQ, VOCAB = 2, 10, 99

# Shared tiny sizes under the usual HF names; an architecture that names them
# differently says so in its own overrides.
_BERTISH = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=37, max_position_embeddings=64)
_LLAMAISH = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=37, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                 pad_token_id=0, bos_token_id=1, eos_token_id=2)

# name, config class, model class, kind, config overrides.
# kind: "mlm" (masked LM), "clm" (causal LM), "seq2seq", "vit" (image classification).
ARCHITECTURES = [
    ("bert", "BertConfig", "BertForMaskedLM", "mlm", dict(_BERTISH)),
    ("roberta", "RobertaConfig", "RobertaForMaskedLM", "mlm", dict(_BERTISH, pad_token_id=1)),
    ("gpt2", "GPT2Config", "GPT2LMHeadModel", "clm",
     dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_inner=37, n_positions=64,
          bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)),
    ("llama", "LlamaConfig", "LlamaForCausalLM", "clm", dict(_LLAMAISH)),
    # causal LMs
    ("mistral", "MistralConfig", "MistralForCausalLM", "clm", dict(_LLAMAISH)),
    ("qwen2", "Qwen2Config", "Qwen2ForCausalLM", "clm", dict(_LLAMAISH)),
    ("qwen3", "Qwen3Config", "Qwen3ForCausalLM", "clm", dict(_LLAMAISH, head_dim=8)),
    ("gemma", "GemmaConfig", "GemmaForCausalLM", "clm", dict(_LLAMAISH, head_dim=8)),
    ("gemma2", "Gemma2Config", "Gemma2ForCausalLM", "clm",
     dict(_LLAMAISH, head_dim=8, sliding_window=4, query_pre_attn_scalar=8)),
    ("gemma3_text", "Gemma3TextConfig", "Gemma3ForCausalLM", "clm",
     dict(_LLAMAISH, head_dim=8, sliding_window=4, query_pre_attn_scalar=8,
          layer_types=["sliding_attention", "full_attention"])),
    ("phi3", "Phi3Config", "Phi3ForCausalLM", "clm", dict(_LLAMAISH)),
    ("opt", "OPTConfig", "OPTForCausalLM", "clm",
     dict(vocab_size=VOCAB, hidden_size=32, ffn_dim=37, num_hidden_layers=2, num_attention_heads=4,
          word_embed_proj_dim=32, max_position_embeddings=64, pad_token_id=1, bos_token_id=2, eos_token_id=2)),
    ("gpt_neox", "GPTNeoXConfig", "GPTNeoXForCausalLM", "clm",
     dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=37, num_hidden_layers=2, num_attention_heads=4,
          max_position_embeddings=64, bos_token_id=0, eos_token_id=2)),
    ("gptj", "GPTJConfig", "GPTJForCausalLM", "clm",
     dict(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_inner=37, rotary_dim=4, n_positions=64,
          bos_token_id=VOCAB - 1, eos_token_id=VOCAB - 1)),
    ("falcon", "FalconConfig", "FalconForCausalLM", "clm",
     dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
          bos_token_id=1, eos_token_id=2)),
    ("bloom", "BloomConfig", "BloomForCausalLM", "clm",
     dict(vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=4, bos_token_id=1, eos_token_id=2, pad_token_id=3)),
    ("stablelm", "StableLmConfig", "StableLmForCausalLM", "clm", dict(_LLAMAISH)),
    ("olmo2", "Olmo2Config", "Olmo2ForCausalLM", "clm", dict(_LLAMAISH)),
    ("smollm3", "SmolLM3Config", "SmolLM3ForCausalLM", "clm", dict(_LLAMAISH)),
    # masked LMs
    ("distilbert", "DistilBertConfig", "DistilBertForMaskedLM", "mlm",
     dict(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=37, max_position_embeddings=64)),
    ("albert", "AlbertConfig", "AlbertForMaskedLM", "mlm", dict(_BERTISH, embedding_size=16)),
    ("electra", "ElectraConfig", "ElectraForMaskedLM", "mlm", dict(_BERTISH, embedding_size=16)),
    ("deberta_v2", "DebertaV2Config", "DebertaV2ForMaskedLM", "mlm",
     dict(_BERTISH, relative_attention=True, position_biased_input=False, pos_att_type=["p2c", "c2p"],
          position_buckets=16, max_relative_positions=-1, norm_rel_ebd="layer_norm", share_att_key=True)),
    ("xlm_roberta", "XLMRobertaConfig", "XLMRobertaForMaskedLM", "mlm", dict(_BERTISH, pad_token_id=1)),
    ("mpnet", "MPNetConfig", "MPNetForMaskedLM", "mlm", dict(_BERTISH)),
    # encoder-decoders
    ("t5", "T5Config", "T5ForConditionalGeneration", "seq2seq",
     dict(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_decoder_layers=2, num_heads=4,
          relative_attention_num_buckets=8, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)),
    ("bart", "BartConfig", "BartForConditionalGeneration", "seq2seq",
     dict(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
          decoder_attention_heads=4, encoder_ffn_dim=37, decoder_ffn_dim=37, max_position_embeddings=64,
          pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=None)),
    # vision
    ("vit", "ViTConfig", "ViTForImageClassification", "vit",
     dict(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
          num_attention_heads=4, intermediate_size=37, num_labels=3)),
]

MODES = ("train/sdpa", "train/eager", "eval/sdpa", "eval/eager")
# model.loss_type to set when transformers leaves it None (see the module docstring).
LOSS_TYPES = {"mlm": "ForMaskedLM", "clm": "ForCausalLM", "seq2seq": "ForConditionalGeneration",
              "vit": "ForImageClassification"}


def op_name(target):
    """'aten.add.Tensor' for an OpOverload (str(op)), 'operator.getitem', ...; stable across runs."""
    import torch

    if isinstance(target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return str(target)
    if isinstance(target, torch._ops.HigherOrderOperator):
        return "higher_order." + target.name()
    module = getattr(target, "__module__", None) or "builtins"
    if module == "_operator":
        module = "operator"
    return f"{module}.{getattr(target, '__qualname__', None) or getattr(target, '__name__', repr(target))}"


def _clean(message):
    """A break reason or error without machine-specific paths, addresses or ids, cut to a few lines."""
    text = str(message)
    text = re.sub(r"(/[^\s\"':]*)?/(site-packages|dist-packages)/", "", text)
    text = text.replace(ROOT + "/", "")
    text = re.sub(r"0x[0-9a-fA-F]+", "0x?", text)
    text = re.sub(r"id=\d+", "id=?", text)
    lines = [ln.rstrip() for ln in text.strip().splitlines() if ln.strip()]
    # drop the generic hints dynamo appends
    keep = [ln for ln in lines if not ln.lstrip().startswith(("Hint:", "For more details", "Developer debug context",
                                                              "from user code", "Set TORCHDYNAMO", "For even more"))]
    return "\n".join(keep[:6])


def _zero_dropouts(config):
    """Sets every dropout-like probability of the config to 0; returns the keys it changed."""
    changed = []
    for key, value in sorted(config.to_dict().items()):
        k = key.lower()
        if ("dropout" in k or "pdrop" in k or k == "layerdrop") and isinstance(value, float) and not isinstance(value, bool):
            if value != 0.0:
                setattr(config, key, 0.0)
                changed.append(key)
    return changed


def _inputs(kind, train, config):
    import torch

    g = torch.Generator().manual_seed(1)
    if kind == "vit":
        pixel_values = torch.randn(BATCH, config.num_channels, config.image_size, config.image_size, generator=g)
        out = dict(pixel_values=pixel_values)
        if train:
            out["labels"] = torch.randint(0, config.num_labels, (BATCH,), generator=g)
        return out
    ids = torch.randint(3, VOCAB, (BATCH, SEQ), generator=g)
    mask = torch.ones(BATCH, SEQ, dtype=torch.long)
    mask[1, -2:] = 0  # row 1: two padding positions at the end
    out = dict(input_ids=ids, attention_mask=mask)
    if kind == "seq2seq":
        labels = torch.randint(3, VOCAB, (BATCH, SEQ - 2), generator=g)
        labels[1, -1] = -100
        if train:
            out["labels"] = labels
        else:
            out["decoder_input_ids"] = labels.clamp(min=0)
        return out
    if train:
        labels = ids.clone()
        if kind == "mlm":  # loss on a few positions only
            labels[torch.rand(BATCH, SEQ, generator=g) > 0.3] = -100
        labels[mask == 0] = -100
        out["labels"] = labels
    return out


def _supports(model_cls, attn):
    if attn == "sdpa":
        return bool(getattr(model_cls, "_supports_sdpa", False))
    return True


class Recorder:
    """The recording backend of one run: ops per graph kind, graphs counted."""

    def __init__(self):
        import torch
        from torch._dynamo.backends.common import aot_autograd
        from functorch.compile import make_boxed_func
        from lazytrain.torch_backend._decompositions import decomposition_table

        self.ops = set()
        self.counts = {"dynamo": 0, "forward": 0, "backward": 0}

        def compiler(which):
            def rec(gm, example_inputs):
                self.counts[which] += 1
                for node in gm.graph.nodes:
                    if node.op == "call_function":
                        self.ops.add(op_name(node.target))
                return make_boxed_func(gm.forward)

            return rec

        inner = aot_autograd(fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
                             decompositions=decomposition_table())

        def backend(gm, example_inputs):
            self.counts["dynamo"] += 1
            return inner(gm, example_inputs)

        self.backend = backend


def build(spec, mode):
    """The census's model and inputs of one architecture in one mode ("train/sdpa", ...): the config
    with every dropout 0 and use_cache=False, the attention implementation set, parameters seeded
    (torch.manual_seed(0)), the loss_type workaround, model.train(mode is train); returns
    (model, inputs). Shared with tools/torch_compile_parity.py."""
    import torch
    import transformers

    name, config_cls, model_cls, kind, overrides = spec
    phase, attn = mode.split("/")
    train = phase == "train"
    torch.manual_seed(0)
    config = getattr(transformers, config_cls)(**overrides)
    _zero_dropouts(config)
    if hasattr(config, "use_cache"):
        config.use_cache = False
    config._attn_implementation = attn
    model = getattr(transformers, model_cls)(config)
    if getattr(model, "loss_type", "x") is None:
        model.loss_type = LOSS_TYPES[kind]
    model.train(train)
    inputs = _inputs(kind, train, config)
    if kind != "vit" and hasattr(config, "use_cache"):
        inputs["use_cache"] = False
    return model, inputs


def _run_once(spec, mode, fullgraph):
    """Builds the model fresh, compiles it, runs one step; returns (Recorder, break reasons)."""
    import torch
    from torch._dynamo.utils import counters

    phase, attn = mode.split("/")
    train = phase == "train"
    torch._dynamo.reset()
    counters.clear()
    model, inputs = build(spec, mode)
    rec = Recorder()
    compiled = torch.compile(model, backend=rec.backend, dynamic=False, fullgraph=fullgraph)
    if train:
        out = compiled(**inputs)
        out.loss.backward()
    else:
        with torch.no_grad():
            compiled(**inputs)
    if model.config._attn_implementation != attn:
        raise RuntimeError(f"attn_implementation became {model.config._attn_implementation!r}")
    reasons = sorted({_clean(r) for r in counters["graph_break"]})
    return rec, reasons


def census_mode(spec, mode):
    """The census entry of one architecture in one mode (a dict)."""
    import transformers

    model_cls = getattr(transformers, spec[2])
    attn = mode.split("/")[1]
    if not _supports(model_cls, attn):
        return {"supported": False, "reason": f"{spec[2]}._supports_{attn} is False"}
    entry = {"supported": True}
    try:
        rec, reasons = _run_once(spec, mode, fullgraph=True)
        entry["fullgraph_ok"] = True
    except Exception as e:  # a graph break under fullgraph=True, or a failure
        entry["fullgraph_ok"] = False
        entry["fullgraph_error"] = f"{type(e).__name__}: {_clean(e)}"
        try:
            rec, reasons = _run_once(spec, mode, fullgraph=False)
        except Exception as e2:
            entry["error"] = f"{type(e2).__name__}: {_clean(e2)}"
            return entry
    entry["graphs"] = dict(rec.counts)
    entry["graph_breaks"] = reasons
    entry["ops"] = sorted(rec.ops)
    return entry


def census_arch(spec, modes=MODES):
    import transformers

    name, config_cls, model_cls, kind, overrides = spec
    config = getattr(transformers, config_cls)(**overrides)
    zeroed = _zero_dropouts(config)
    model_cls_obj = getattr(transformers, model_cls)
    workarounds = []
    # what the constructor leaves in loss_type, without building the model
    probe_loss_type = model_cls_obj.__name__
    from transformers.loss.loss_utils import LOSS_MAPPING

    if probe_loss_type not in LOSS_MAPPING and not re.findall(f"({'|'.join(LOSS_MAPPING)})", probe_loss_type):
        workarounds.append(f"model.loss_type = {LOSS_TYPES[kind]!r} (transformers infers None from the class "
                           f"name; loss_function would call logger.warning_once, a graph break)")
    entry = {
        "class": model_cls,
        "config_class": config_cls,
        "kind": kind,
        "config_overrides": {k: overrides[k] for k in sorted(overrides)},
        "dropouts_zeroed": zeroed,
        "use_cache": False if hasattr(config, "use_cache") else None,
        "workarounds": workarounds,
        "modes": {},
    }
    for mode in modes:
        entry["modes"][mode] = census_mode(spec, mode)
    ops = set()
    for m in entry["modes"].values():
        ops.update(m.get("ops", ()))
    entry["ops"] = sorted(ops)
    return entry


def run(names=None, log=sys.stderr):
    import torch
    import transformers

    torch.set_num_threads(1)
    import logging

    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)
    specs = [s for s in ARCHITECTURES if names is None or s[0] in names]
    unknown = set(names or ()) - {s[0] for s in specs}
    if unknown:
        raise SystemExit(f"unknown architectures: {sorted(unknown)}")
    result = {
        "about": "ATen ops reaching a torch.compile backend through aot_autograd with lazytrain's decomposition "
                 "table; written by tools/torch_op_census.py, checked by tests/python/test_torch_op_census.py",
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "inputs": {"batch": BATCH, "seq": SEQ, "vocab": VOCAB, "image": "2x3x16x16 for vit"},
        "architectures": {},
    }
    for spec in specs:
        t0 = time.time()
        result["architectures"][spec[0]] = entry = census_arch(spec)
        summary = ", ".join(f"{m}:" + ("-" if not e["supported"] else "ERR" if "error" in e
                                       else ("ok" if e["fullgraph_ok"] else "break") + f"/{len(e['ops'])}")
                            for m, e in entry["modes"].items())
        print(f"{spec[0]:12s} {time.time() - t0:5.1f}s  {summary}", file=log, flush=True)
    union = set()
    for a in result["architectures"].values():
        union.update(a["ops"])
    result["union"] = sorted(union)
    return result


def dumps(result):
    return json.dumps(result, indent=1, sort_keys=False) + "\n"


def markdown(result):
    """The docs table (docs/torch_compile_architectures.md) from a census."""
    rows = ["| Architecture | Class | Kind | Modes (attention) | fullgraph=True | Graphs (fw+bw, train/sdpa) "
            "| Ops (train / eval) | Passes under lazytrain |",
            "|---|---|---|---|---|---|---|---|"]
    for name, a in result["architectures"].items():
        modes = a["modes"]
        ran = [m for m, e in modes.items() if e["supported"] and "error" not in e]
        attns = sorted({m.split("/")[1] for m in ran}, key=["sdpa", "eager"].index)
        skipped = [m for m, e in modes.items() if not e["supported"]]
        errors = [m for m, e in modes.items() if "error" in e]
        breaks = [m for m in ran if not modes[m]["fullgraph_ok"]]
        fg = "yes, all modes" if not breaks else "breaks in " + ", ".join(breaks)
        if errors:
            fg += "; fails in " + ", ".join(errors)
        mode_text = "train, eval; " + " + ".join(attns) + (" (no sdpa)" if any("sdpa" in m for m in skipped) else "")
        first = modes.get("train/sdpa") if "train/sdpa" in ran else modes[ran[0]] if ran else None
        graphs = f"{first['graphs']['forward']}+{first['graphs']['backward']}" if first else "-"
        train_ops = set().union(*(set(modes[m]["ops"]) for m in ran if m.startswith("train")))
        eval_ops = set().union(*(set(modes[m]["ops"]) for m in ran if m.startswith("eval")))
        rows.append(f"| {name} | `{a['class']}` | {a['kind']} | {mode_text} | {fg} | {graphs} "
                    f"| {len(train_ops)} / {len(eval_ops)} |  |")
    return "\n".join(rows) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="compare with the checked-in file; exit 1 on a difference")
    p.add_argument("--only", help="comma-separated architecture names (default: all)")
    p.add_argument("--out", default=DEFAULT_OUT)
    p.add_argument("--markdown", action="store_true",
                   help="print the docs table of the file at --out (runs nothing)")
    args = p.parse_args(argv)
    if args.markdown:
        with open(args.out) as f:
            sys.stdout.write(markdown(json.load(f)))
        return 0
    names = args.only.split(",") if args.only else None
    t0 = time.time()
    result = run(names)
    print(f"{len(result['architectures'])} architectures, {len(result['union'])} ops in the union, "
          f"{time.time() - t0:.0f}s", file=sys.stderr)
    if args.check:
        with open(args.out) as f:
            stored = json.load(f)
        if names:  # compare only the subset
            stored = dict(stored, architectures={n: stored["architectures"].get(n) for n in result["architectures"]})
            stored["union"] = result["union"] = None
        a, b = dumps(stored).splitlines(), dumps(result).splitlines()
        if a != b:
            sys.stdout.writelines(ln + "\n" for ln in difflib.unified_diff(a, b, "checked-in", "now", lineterm=""))
            print("torch_op_census: the census differs from the checked-in file", file=sys.stderr)
            return 1
        print("torch_op_census: matches the checked-in file", file=sys.stderr)
        return 0
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(dumps(result))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

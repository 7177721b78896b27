#!/usr/bin/env python3
"""Goldens of Hugging Face's real LlamaForCausalLM on tiny configs -> tests/golden/llama_*.safetensors.

  /work/venv-llama/bin/python tools/make_golden_llama.py [OUTDIR]     (default tests/golden)

Runs in a venv with the pinned torch==2.13.0 (CPU wheel) and transformers==5.23.0
(python/requirements-interop.txt; set up in about a minute:
  python3 -m venv /work/venv-llama && /work/venv-llama/bin/pip install -r python/requirements-interop.txt).
The attention is transformers' default for Llama, "sdpa" (torch's scaled_dot_product_attention).

Writes four files (float tensors float32, integer tensors int64):

  llama_tiny_clm.safetensors       CONFIG (untied lm_head, grouped-query attention: 4 heads, 2 key/value heads)
  llama_tiny_clm_bf16.safetensors  the same model, inputs and parameters, the forward under
                                   torch.autocast("cpu", dtype=torch.bfloat16) (backward outside it);
                                   logits and hidden states were bf16, stored as F32; gradients F32
  llama_tiny_clm_tied.safetensors  TIED_CONFIG: tie_word_embeddings, attention_bias, mlp_bias,
                                   pad_token_id 0 (embed_tokens' padding_idx: row 0 gets no lookup
                                   gradient; the padded positions of row 1 hold id 0), rope_theta 500
    <HF param name>          every parameter once (a tied lm_head.weight is model.embed_tokens.weight)
    grad.<HF param name>     its gradient after loss.backward()
    input_ids, attention_mask, labels  [2, 8]  (row 1: last 2 positions padding, their labels -100)
    logits [2, 8, 99], loss []
    hidden_states.<i> [2, 8, 32]  i=0: embeddings, 1..L-1: output of layer i-1, L: after model.norm
  Parameters: transformers' own initialisation (_init_weights: N(0, initializer_range) weights,
  zero biases, unit norms) with initializer_range 0.2 so attention is far from uniform, then every
  norm weight and bias moved by N(0, 0.1) so that a norm weight of 1 or a zero bias hides nothing.

  llama_generate.safetensors       GENERATE_CONFIG: greedy search written out plainly, as
    tools/make_golden_generate.py does for GPT-2: each new token is the argmax of the last
    position's logits over the whole sequence so far, recomputed without a cache, one prompt at a
    time (no padding). initializer_range 1.0 so that greedy choices are far apart (the script
    refuses a smallest top-1/top-2 gap under 1e-3). eos_token_id is picked so that prompt 1 ends
    after step 25 and the others later or never; pad_token_id is null (generate pads with eos).
    <HF param name>, prompt.<i> [L_i] (lengths 5, 13, 21), generated.<i> [50] (eos-padded)

__metadata__: config (config.json fields, transformers 4.x names: rope_theta, rope_scaling null),
autocast, generator (script, torch and transformers versions); max_new_tokens for generation.
"""
import json
import os
import sys

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from safetensors_io import save_file  # noqa: E402

CONFIG = dict(model_type="llama", vocab_size=99, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
              num_attention_heads=4, num_key_value_heads=2, head_dim=8, hidden_act="silu", max_position_embeddings=64,
              initializer_range=0.2, rms_norm_eps=1e-6, rope_theta=10000.0, rope_scaling=None, attention_bias=False,
              attention_dropout=0.0, mlp_bias=False, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2,
              pad_token_id=None)
TIED_CONFIG = dict(CONFIG, tie_word_embeddings=True, attention_bias=True, mlp_bias=True, pad_token_id=0, rope_theta=500.0)
GENERATE_CONFIG = dict(CONFIG, vocab_size=384, max_position_embeddings=128, initializer_range=1.0, bos_token_id=383,
                       eos_token_id=383)
MAX_NEW = 50
PROMPT_LENGTHS = [5, 13, 21]
FIRST_EOS_STEP = 25
VERSIONS = f"torch {torch.__version__}, transformers {transformers.__version__}"


def make_model(config, perturb):
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(**config, attn_implementation="sdpa"))
    if perturb:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "norm" in name or name.endswith(".bias"):
                    p.add_(torch.randn_like(p) * 0.1)
    return model


def clm_golden(config, bf16, out):
    model = make_model(config, perturb=True)
    model.train()  # attention_dropout is 0
    B, S, V = 2, 8, config["vocab_size"]
    torch.manual_seed(1)
    input_ids = torch.randint(1, V, (B, S), dtype=torch.int64)
    attention_mask = torch.ones(B, S, dtype=torch.int64)
    attention_mask[1, -2:] = 0
    if config["pad_token_id"] is not None:
        input_ids[attention_mask == 0] = config["pad_token_id"]
    labels = input_ids.clone()
    labels[attention_mask == 0] = -100
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        res = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, output_hidden_states=True)
    res.loss.backward()
    tensors = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels,
               "logits": res.logits.detach().float(), "loss": res.loss.detach().float()}
    for i, h in enumerate(res.hidden_states):
        tensors[f"hidden_states.{i}"] = h.detach().float()
    for name, p in model.named_parameters():  # a tied lm_head.weight is listed once, as embed_tokens
        tensors[name] = p.detach()
        tensors[f"grad.{name}"] = p.grad.detach()
    save_file(tensors, out, metadata={"config": json.dumps(config, sort_keys=True), "autocast": "bfloat16" if bf16 else "none",
                                      "generator": f"tools/make_golden_llama.py ({VERSIONS})"})
    print(f"wrote {out}: {len(tensors)} tensors, loss={res.loss.item():.6f}, logits dtype {res.logits.dtype}")


def greedy(model, prompt, max_new, eos):
    ids, out, gaps = list(prompt), [], []
    for _ in range(max_new):
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1]
        top = torch.topk(logits, 2).values
        gaps.append((top[0] - top[1]).item())
        token = int(torch.argmax(logits))
        out.append(token)
        ids.append(token)
        if token == eos:
            break
    return out, min(gaps)


def generate_golden(out_path):
    model = make_model(GENERATE_CONFIG, perturb=False)
    model.eval()
    torch.manual_seed(2)
    V = GENERATE_CONFIG["vocab_size"]
    prompts = [torch.randint(0, V - 1, (n,)).tolist() for n in PROMPT_LENGTHS]
    free = [greedy(model, p, MAX_NEW, eos=-1)[0] for p in prompts]

    def first(seq, token):
        return seq.index(token) if token in seq else MAX_NEW
    eos = next(t for step, t in enumerate(free[1]) if step >= FIRST_EOS_STEP and first(free[1], t) == step
               and first(free[0], t) > step and first(free[2], t) > step)
    config = dict(GENERATE_CONFIG, eos_token_id=eos, bos_token_id=eos)
    tensors, min_gap = {}, float("inf")
    for i, p in enumerate(prompts):
        seq, gap = greedy(model, p, MAX_NEW, eos)
        min_gap = min(min_gap, gap)
        seq += [eos] * (MAX_NEW - len(seq))  # no pad_token_id: generate pads with eos
        tensors[f"prompt.{i}"] = torch.tensor(p, dtype=torch.int64)
        tensors[f"generated.{i}"] = torch.tensor(seq, dtype=torch.int64)
        print(f"prompt {i}: {p}\n  -> {seq}")
    if min_gap < 1e-3:
        sys.exit(f"smallest logit gap {min_gap:g} is too small for a token-exact test")
    for name, p in model.named_parameters():
        tensors[name] = p.detach()
    save_file(tensors, out_path, metadata={"config": json.dumps(config, sort_keys=True), "max_new_tokens": str(MAX_NEW),
                                           "generator": f"tools/make_golden_llama.py ({VERSIONS})"})
    print(f"wrote {out_path}: eos {eos}, smallest top-1/top-2 logit gap {min_gap:.4f}")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "golden")
    torch.set_num_threads(1)
    clm_golden(CONFIG, False, os.path.join(out_dir, "llama_tiny_clm.safetensors"))
    clm_golden(CONFIG, True, os.path.join(out_dir, "llama_tiny_clm_bf16.safetensors"))
    clm_golden(TIED_CONFIG, False, os.path.join(out_dir, "llama_tiny_clm_tied.safetensors"))
    generate_golden(os.path.join(out_dir, "llama_generate.safetensors"))


if __name__ == "__main__":
    main()

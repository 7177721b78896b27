#!/usr/bin/env -S /usr/bin/python3
"""Golden forward/backward of a tiny GPT2LMHeadModel -> tests/golden/gpt2_tiny_clm.safetensors.

  /usr/bin/python3 tools/make_golden_gpt2.py [OUT]      (default tests/golden/gpt2_tiny_clm.safetensors)
  /usr/bin/python3 tools/make_golden_gpt2.py --bf16 [OUT]
      the same model, inputs and parameters under torch.autocast('cpu', dtype=torch.bfloat16)
      (default tests/golden/gpt2_tiny_clm_bf16.safetensors; logits stored as float32)

Contents (float tensors float32, integer tensors int64):
  <HF param name>          every parameter once (lm_head.weight is tied to transformer.wte.weight)
  grad.<HF param name>     its gradient after loss.backward() (wte: includes the lm_head's part)
  input_ids, attention_mask, labels  [2, 8]   (row 1: last 2 positions padding, their labels -100)
  logits [2, 8, 99], loss []
  hidden_states.<i> [2, 8, 32]  i=0: embeddings, i=1..L: output of block i (debug aid)
__metadata__["config"] = the model config as JSON (HF config.json field names).
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "torch_reference"))
from safetensors_io import save_file  # noqa: E402
from gpt2 import GPT2LMHeadModel  # noqa: E402

CONFIG = dict(model_type="gpt2", vocab_size=99, n_positions=64, n_embd=32, n_layer=2, n_head=4, n_inner=None,
              activation_function="gelu_new", resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
              layer_norm_epsilon=1e-5, initializer_range=0.02, bos_token_id=98, eos_token_id=98)


def main():
    args = sys.argv[1:]
    bf16 = "--bf16" in args
    args = [a for a in args if a != "--bf16"]
    default = "gpt2_tiny_clm_bf16.safetensors" if bf16 else "gpt2_tiny_clm.safetensors"
    out = args[0] if args else os.path.join(HERE, "..", "tests", "golden", default)
    torch.set_num_threads(2)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(CONFIG)
    model.train()  # dropout probabilities are 0

    B, S, V = 2, 8, CONFIG["vocab_size"]
    input_ids = torch.randint(0, V, (B, S), dtype=torch.int64)
    attention_mask = torch.ones(B, S, dtype=torch.int64)
    attention_mask[1, -2:] = 0
    labels = input_ids.clone()
    labels[attention_mask == 0] = -100

    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        res = model(input_ids, attention_mask, labels=labels)
    res["loss"].backward()
    tensors = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels,
               "logits": res["logits"].detach().float(), "loss": res["loss"].detach().float()}
    for i, h in enumerate(res["hidden_states"]):
        tensors[f"hidden_states.{i}"] = h.detach().float()
    for name, p in model.named_parameters():  # lm_head.weight is wte's: listed once
        tensors[name] = p.detach()
        tensors[f"grad.{name}"] = p.grad.detach()
    save_file(tensors, out, metadata={"config": json.dumps(CONFIG, sort_keys=True),
                                      "autocast": "bfloat16" if bf16 else "none",
                                      "generator": "tools/make_golden_gpt2.py (torch " + torch.__version__ + ")"})
    print(f"wrote {out}: {len(tensors)} tensors, loss={res['loss'].item():.6f}")


if __name__ == "__main__":
    main()

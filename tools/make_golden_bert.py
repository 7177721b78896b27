#!/usr/bin/env -S /usr/bin/python3
"""Golden forward/backward of a tiny BertForMaskedLM -> tests/golden/bert_tiny_mlm.safetensors.

  /usr/bin/python3 tools/make_golden_bert.py [OUT]      (default tests/golden/bert_tiny_mlm.safetensors)
  /usr/bin/python3 tools/make_golden_bert.py --bf16 [OUT]
      the same model, inputs and parameters under torch.autocast('cpu', dtype=torch.bfloat16)
      (default tests/golden/bert_tiny_mlm_bf16.safetensors; logits stored as float32)

Contents (all float tensors float32, integer tensors int64):
  <HF param name>          every parameter once (the tied decoder is only stored as
                           bert.embeddings.word_embeddings.weight and cls.predictions.bias)
  grad.<HF param name>     its gradient after loss.backward() (word embeddings: includes the decoder's part)
  input_ids, attention_mask, labels  [2, 8]   (row 1: last 2 positions masked; ~half labels -100)
  logits [2, 8, 99], loss []
  hidden_states.<i> [2, 8, 32]  i=0: embeddings output, i=1..L: output of encoder layer i (debug aid)
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
from bert import BertForMaskedLM  # noqa: E402

CONFIG = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=37, hidden_act="gelu", hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0, max_position_embeddings=64, type_vocab_size=2,
              initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0)


def main():
    args = sys.argv[1:]
    bf16 = "--bf16" in args
    args = [a for a in args if a != "--bf16"]
    default = "bert_tiny_mlm_bf16.safetensors" if bf16 else "bert_tiny_mlm.safetensors"
    out = args[0] if args else os.path.join(HERE, "..", "tests", "golden", default)
    torch.set_num_threads(2)
    torch.manual_seed(0)
    model = BertForMaskedLM(CONFIG)  # HF init: N(0, 0.02) weights, zero biases, pad row 0, LN 1/0
    model.train()  # dropout probabilities are 0, so train == eval

    B, S, V = 2, 8, CONFIG["vocab_size"]
    input_ids = torch.randint(1, V, (B, S), dtype=torch.int64)
    attention_mask = torch.ones(B, S, dtype=torch.int64)
    attention_mask[1, -2:] = 0
    labels = torch.randint(0, V, (B, S), dtype=torch.int64)
    labels[torch.rand(B, S) < 0.5] = -100

    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        res = model(input_ids, attention_mask, labels=labels, return_hidden_states=True)
    res["loss"].backward()

    tensors = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels,
               "logits": res["logits"].detach().float(), "loss": res["loss"].detach().float()}
    for i, h in enumerate(res["hidden_states"]):
        tensors[f"hidden_states.{i}"] = h.detach().float()
    for name, p in model.named_parameters():  # deduplicated: no cls.predictions.decoder.*
        tensors[name] = p.detach()
        tensors[f"grad.{name}"] = p.grad.detach()
    assert all(t.dtype in (torch.float32, torch.int64) for t in tensors.values())
    save_file(tensors, out, metadata={"config": json.dumps(CONFIG, sort_keys=True),
                                      "autocast": "bfloat16" if bf16 else "none",
                                      "generator": "tools/make_golden_bert.py (torch "
                                                   + torch.__version__ + ")"})
    print(f"wrote {out}: {len(tensors)} tensors, loss={res['loss'].item():.6f}, "
          f"labels used={(labels != -100).sum().item()}")


if __name__ == "__main__":
    main()

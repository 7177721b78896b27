#!/usr/bin/env -S /usr/bin/python3
"""Golden forward/backward of a tiny RobertaForMaskedLM -> tests/golden/roberta_tiny_mlm.safetensors.

  /usr/bin/python3 tools/make_golden_roberta.py [OUT]

Same layout as make_golden_bert.py: every parameter under its HF name (roberta.*, lm_head.*;
the tied lm_head.decoder.* are not stored), grad.<name>, input_ids / attention_mask / labels
[2, 8] (row 1 ends in 2 padding tokens, id 1, so the position ids skip them),
logits [2, 8, 99], loss []. __metadata__["config"] holds the config.json fields.
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "torch_reference"))
from safetensors_io import save_file  # noqa: E402
from roberta import RobertaForMaskedLM  # noqa: E402

CONFIG = dict(model_type="roberta", vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
              intermediate_size=37, hidden_act="gelu", hidden_dropout_prob=0.0,
              attention_probs_dropout_prob=0.0, max_position_embeddings=20, type_vocab_size=1,
              initializer_range=0.02, layer_norm_eps=1e-5, pad_token_id=1, bos_token_id=0, eos_token_id=2)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "golden", "roberta_tiny_mlm.safetensors")
    torch.set_num_threads(2)
    torch.manual_seed(0)
    model = RobertaForMaskedLM(CONFIG)
    model.train()
    B, S, V = 2, 8, CONFIG["vocab_size"]
    input_ids = torch.randint(5, V, (B, S), dtype=torch.int64)
    input_ids[:, 0] = 0  # <s>
    input_ids[0, -1] = 2  # </s>
    input_ids[1, -3] = 2
    input_ids[1, -2:] = 1  # <pad>
    attention_mask = (input_ids != 1).long()
    labels = torch.randint(5, V, (B, S), dtype=torch.int64)
    labels[torch.rand(B, S) < 0.5] = -100
    labels[1, -2:] = -100
    res = model(input_ids, attention_mask, labels=labels)
    res["loss"].backward()
    tensors = {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels,
               "logits": res["logits"].detach(), "loss": res["loss"].detach()}
    for i, h in enumerate(res["hidden_states"]):
        tensors[f"hidden_states.{i}"] = h.detach()
    for name, p in model.named_parameters():
        tensors[name] = p.detach()
        tensors[f"grad.{name}"] = p.grad.detach()
    save_file(tensors, out, metadata={"config": json.dumps(CONFIG, sort_keys=True),
                                      "generator": "tools/make_golden_roberta.py (torch " + torch.__version__ + ")"})
    print(f"wrote {out}: {len(tensors)} tensors, loss={res['loss'].item():.6f}; parameters: "
          + ", ".join(n for n, _ in model.named_parameters() if not n.startswith("roberta.encoder")))


if __name__ == "__main__":
    main()

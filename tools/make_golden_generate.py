#!/usr/bin/env -S /usr/bin/python3
"""Golden greedy generation of a tiny GPT2LMHeadModel -> tests/golden/gpt2_generate.safetensors.

  /usr/bin/python3 tools/make_golden_generate.py [OUT]   (default tests/golden/gpt2_generate.safetensors)

Hugging Face's greedy search (GenerationMixin.greedy_search) written out plainly: each new
token is argmax of the last position's logits over the whole sequence so far, recomputed
without a cache and one prompt at a time (no padding), so the test checks lazytrain's KV
cache, left padding and batching against a path that has none of them. A sequence that
emits eos_token_id is finished: its later tokens are the pad id (eos for GPT-2), and
generation stops when every sequence has finished or max_new_tokens were made.

The weights are drawn with a large initializer_range (1.0) so that the greedy choices are
far apart: the script prints the smallest gap between the best and second logit over all
steps, and refuses to write a file where it is under 1e-3.

Contents (float32 / int64):
  <HF param name>       every parameter (lm_head.weight is tied to transformer.wte.weight)
  prompt.<i>            [L_i] the prompt ids of prompt i (i = 0, 1, 2; lengths 5, 13, 21)
  generated.<i>         [MAX_NEW] the new ids of prompt i (pad-filled after eos)
__metadata__: config (HF config.json fields; eos_token_id is chosen so that prompt 1 ends
early, after FIRST_EOS_STEP, and the other prompts later or not at all), max_new_tokens.
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

CONFIG = dict(model_type="gpt2", vocab_size=384, n_positions=128, n_embd=32, n_layer=2, n_head=4, n_inner=None,
              activation_function="gelu_new", resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.1,
              layer_norm_epsilon=1e-5, initializer_range=1.0, bos_token_id=383, eos_token_id=383)
MAX_NEW = 50
PROMPT_LENGTHS = [5, 13, 21]
FIRST_EOS_STEP = 25  # eos is prompt 1's first token from this step on that it has not made before


def greedy(model, prompt, max_new, eos):
    ids, out, gaps = list(prompt), [], []
    for _ in range(max_new):
        with torch.no_grad():
            logits = model(torch.tensor([ids]))["logits"][0, -1]
        top = torch.topk(logits, 2).values
        gaps.append((top[0] - top[1]).item())
        token = int(torch.argmax(logits))
        out.append(token)
        ids.append(token)
        if token == eos:
            break
    return out, min(gaps)


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "golden", "gpt2_generate.safetensors")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(CONFIG)
    model.eval()
    V = CONFIG["vocab_size"]
    prompts = [torch.randint(0, V - 1, (n,)).tolist() for n in PROMPT_LENGTHS]
    # Without eos first, to pick an eos id that ends prompt 1 early and the others later or never.
    free = [greedy(model, p, MAX_NEW, eos=-1)[0] for p in prompts]

    def first(seq, token):
        return seq.index(token) if token in seq else MAX_NEW
    eos = next(t for step, t in enumerate(free[1]) if step >= FIRST_EOS_STEP and first(free[1], t) == step
               and first(free[0], t) > step and first(free[2], t) > step)
    config = dict(CONFIG, eos_token_id=eos, bos_token_id=eos)
    tensors, min_gap = {}, float("inf")
    for i, p in enumerate(prompts):
        seq, gap = greedy(model, p, MAX_NEW, eos)
        min_gap = min(min_gap, gap)
        seq += [eos] * (MAX_NEW - len(seq))  # pad_token_id = eos_token_id, as GPT-2's generate sets it
        tensors[f"prompt.{i}"] = torch.tensor(p, dtype=torch.int64)
        tensors[f"generated.{i}"] = torch.tensor(seq, dtype=torch.int64)
        print(f"prompt {i}: {p}\n  -> {seq}")
    if min_gap < 1e-3:
        sys.exit(f"smallest logit gap {min_gap:g} is too small for a token-exact test")
    for name, p in model.named_parameters():
        tensors[name] = p.detach()
    save_file(tensors, out_path, metadata={"config": json.dumps(config, sort_keys=True), "max_new_tokens": str(MAX_NEW),
                                           "generator": "tools/make_golden_generate.py (torch " + torch.__version__ + ")"})
    print(f"wrote {out_path}: eos {eos}, smallest top-1/top-2 logit gap {min_gap:.4f}")


if __name__ == "__main__":
    main()

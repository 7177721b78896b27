#!/usr/bin/python3
"""Greedy generation from a GPT-2 model directory in plain PyTorch: the reference for
`lazytrain generate` on a trained model (tests/models/generation_test.cpp is the golden
test on a tiny one).

  /usr/bin/python3 tools/torch_reference/generate_greedy.py --model DIR --prompt TEXT [--prompt TEXT ...]
      [--max_new_tokens 50]

Loads config.json and model.safetensors (Hugging Face names) into tools/torch_reference/gpt2.py,
tokenizes with tools/torch_reference/gpt2_bpe.py, and for each prompt alone takes the argmax of
the last position's logits over the whole sequence so far, recomputed without a cache, stopping
at eos_token_id as Hugging Face's greedy search. Prints one line a prompt: its ids and the new ones,
space-separated.
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
from gpt2 import GPT2LMHeadModel  # noqa: E402
from gpt2_bpe import GPT2Tokenizer  # noqa: E402
from safetensors_io import load_file  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True)
    p.add_argument("--prompt", action="append", required=True)
    p.add_argument("--max_new_tokens", type=int, default=50)
    a = p.parse_args()
    torch.set_num_threads(1)
    with open(os.path.join(a.model, "config.json")) as f:
        config = json.load(f)
    model = GPT2LMHeadModel(config)
    tensors = load_file(os.path.join(a.model, "model.safetensors"))
    model.load_state_dict({k: v for k, v in tensors.items() if k != "lm_head.weight"}, strict=False)
    model.lm_head.weight = model.transformer.wte.weight
    model.eval()
    tokenizer = GPT2Tokenizer(a.model)
    eos = config.get("eos_token_id", 50256)
    for prompt in a.prompt:
        ids, new = tokenizer.encode(prompt), []
        for _ in range(a.max_new_tokens):
            with torch.no_grad():
                token = int(torch.argmax(model(torch.tensor([ids + new]))["logits"][0, -1]))
            new.append(token)
            if token == eos:
                break
        print(" ".join(map(str, ids + new)))


if __name__ == "__main__":
    main()

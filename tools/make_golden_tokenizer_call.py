#!/usr/bin/env python3
"""Golden outputs of Hugging Face's tokenizer __call__, decode and tokenize for
BERT (bert-base-uncased) and GPT-2 -> tests/golden/tokenizer_call_golden.json.

  python3 -m venv /work/venv-tok
  /work/venv-tok/bin/pip install transformers==4.57.6 tokenizers==0.22.1 huggingface_hub==0.36.2 numpy==2.4.6
  HF_HUB_OFFLINE=1 /work/venv-tok/bin/python tools/make_golden_tokenizer_call.py [DATA_DIR] [OUT]
      DATA_DIR: the shared data (default ../shared/data beside the repository;
      bert-base-uncased/ and gpt2/ there are the hub's files); OUT: default
      tests/golden/tokenizer_call_golden.json

For each model, texts and a list of __call__ cases: the keyword arguments
(plus "model_max_length" / "pad_token" set on the tokenizer first, where a case
has them), and the outputs for the first text alone and for the batch of all
texts: a dict of lists (return_tensors=None), or {"error": "ValueError"} where
transformers raises. The slow (Python) tokenizers make the values; the fast
(Rust) ones are checked to give the same, so the golden holds for both.
"""
import json
import os
import re
import sys
import warnings

import transformers
from transformers import BertTokenizer, BertTokenizerFast, GPT2Tokenizer, GPT2TokenizerFast

transformers.logging.set_verbosity_error()

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "shared", "data")
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "tests", "golden", "tokenizer_call_golden.json")

MODELS = {
    "bert": dict(slow=BertTokenizer, fast=BertTokenizerFast, path="bert-base-uncased", texts=[
        "Hello, world!",
        "The quick brown fox jumps over the lazy dog.",
        "Führer ½ months: don't stop",
        "the [MASK] of France",
        "",
    ]),
    "gpt2": dict(slow=GPT2Tokenizer, fast=GPT2TokenizerFast, path="gpt2", texts=[
        "Hello, world!",
        " The quick brown fox jumps over the lazy dog.",
        "Führer ½ months: don't stop",
        "one<|endoftext|>two",
        "",
    ]),
}

# (name, __call__ kwargs, tokenizer settings)
CASES = [
    ("defaults", {}, {}),
    ("no_special_tokens", {"add_special_tokens": False}, {}),
    ("padding_true", {"padding": True}, {}),
    ("padding_longest_special_mask", {"padding": "longest", "return_special_tokens_mask": True}, {}),
    ("padding_max_length_16", {"padding": "max_length", "max_length": 16}, {}),
    ("pad_and_truncate_8_special_mask",
     {"padding": "max_length", "max_length": 8, "truncation": True, "return_special_tokens_mask": True}, {}),
    ("truncation_true_5", {"truncation": True, "max_length": 5}, {}),
    ("max_length_alone_5", {"max_length": 5}, {}),  # transformers turns truncation on
    ("padding_true_max_length_5", {"padding": True, "max_length": 5}, {}),  # max_length ignored
    ("longest_first_4_no_special", {"truncation": "longest_first", "max_length": 4, "add_special_tokens": False}, {}),
    ("pad_to_multiple_of_8", {"padding": True, "pad_to_multiple_of": 8}, {}),
    ("no_attention_mask", {"padding": True, "return_attention_mask": False}, {}),
    ("do_not_pad_do_not_truncate", {"padding": "do_not_pad", "truncation": "do_not_truncate"}, {}),
    ("special_mask_no_special_tokens", {"return_special_tokens_mask": True, "add_special_tokens": False}, {}),
    ("model_max_length_10_pad_truncate", {"padding": "max_length", "truncation": True}, {"model_max_length": 10}),
    ("model_max_length_6_truncate", {"truncation": True}, {"model_max_length": 6}),
    ("padding_max_length_no_limit", {"padding": "max_length"}, {}),  # no model_max_length: no padding
    ("truncation_no_limit", {"truncation": True}, {}),  # no model_max_length: no truncation
    ("multiple_of_not_dividing_max_length",
     {"padding": "max_length", "truncation": True, "max_length": 10, "pad_to_multiple_of": 4}, {}),  # ValueError
]
BERT_ONLY = [
    ("no_token_type_ids", {"return_token_type_ids": False}, {}),
]
GPT2_ONLY = [
    ("padding_without_pad_token", {"padding": True}, {}),  # ValueError: GPT-2 has no pad token
]
SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
# GPT-2 has no pad token: the padding cases set pad_token = eos_token first, as run_clm users do.
PAD_AS_EOS = {"pad_token": "<|endoftext|>"}


def call(tokenizer, text, kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = tokenizer(text, **kwargs)
        except ValueError:
            return {"error": "ValueError"}
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in out.items()}


def make(name, spec):
    path = os.path.join(DATA, spec["path"])
    texts = spec["texts"]
    cases = CASES + (BERT_ONLY if name == "bert" else GPT2_ONLY)
    out_cases = []
    for case_name, kwargs, settings in cases:
        if name == "gpt2" and case_name != "padding_without_pad_token":
            settings = {**PAD_AS_EOS, **settings}
        results = []
        for cls in (spec["slow"], spec["fast"]):
            tok = cls.from_pretrained(path, **{k: v for k, v in settings.items() if k == "model_max_length"})
            if "pad_token" in settings:
                tok.pad_token = settings["pad_token"]
            results.append((call(tok, texts[0], kwargs), call(tok, texts, kwargs)))
        if results[0] != results[1]:
            raise SystemExit(f"{name} {case_name}: the slow and fast tokenizers differ:\n{results[0]}\n{results[1]}")
        single, batch = results[0]
        out_cases.append({"name": case_name, "kwargs": kwargs, "settings": settings, "single": single, "batch": batch})
    slow = spec["slow"].from_pretrained(path)
    per_text = []
    for text in texts:
        ids = slow(text)["input_ids"]
        per_text.append({
            "text": text,
            "tokens": slow.tokenize(text),
            "ids": ids,
            "decode": slow.decode(ids),
            "decode_skip_special_tokens": slow.decode(ids, skip_special_tokens=True),
            "convert_ids_to_tokens": slow.convert_ids_to_tokens(ids),
        })
    info = {
        "all_special_tokens": slow.all_special_tokens,
        "all_special_ids": slow.all_special_ids,
        "vocab_size": slow.vocab_size,
        "len": len(slow),
        "model_input_names": slow.model_input_names,
        "special_tokens": {k: getattr(slow, k) for k in SPECIAL_TOKENS},
        "special_token_ids": {k + "_id": getattr(slow, k + "_id") for k in SPECIAL_TOKENS},
    }
    return {"path": spec["path"], "texts": texts, "info": info, "cases": out_cases, "per_text": per_text}


def main():
    import tokenizers
    golden = {
        "generated_by": f"tools/make_golden_tokenizer_call.py: transformers {transformers.__version__}, "
                        f"tokenizers {tokenizers.__version__} (slow tokenizers, checked equal to the fast ones)",
        "models": {name: make(name, spec) for name, spec in MODELS.items()},
    }
    text = json.dumps(golden, ensure_ascii=False, indent=1)
    # Innermost arrays (ids, masks, tokens) on one line each, so that the file stays short.
    text = re.sub(r"\[\n\s+([^\[\]{}]*?)\n\s*\]", lambda m: "[" + re.sub(r",\n\s*", ", ", m.group(1)) + "]", text)
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print("wrote", OUT)


if __name__ == "__main__":
    main()

#!/usr/bin/env -S /usr/bin/python3
"""Hugging Face's fill-mask pipeline (transformers.FillMaskPipeline) on the plain-PyTorch reference
models, for any model directory that `lazytrain run_mlm` writes (config.json, model.safetensors and
the tokenizer: vocab.txt for BERT; spm.model for RoBERTa, through Debian's python3-sentencepiece).

  /usr/bin/python3 tools/torch_reference/fill_mask.py --model DIR --text "paris is the [MASK] of france."
        [--text ...] [--top_k 5] [--json] [--save_golden FILE.safetensors]

Prints what `lazytrain fill_mask` prints (the same layout, so the two can be diffed), or with --json
the pipeline's output structure. --save_golden writes, per input i, input_ids.i [S] (I64),
mask_positions.i [M] (I64), mask_logits.i [M, V] (F32), top_ids.i [M, K] (I64), top_scores.i [M, K]
(F32), with __metadata__ texts, top_k, model_type and expected (the pipeline's output as JSON): the
golden layout that tests/models/fill_mask_golden_test.cpp reads (set LAZYTRAIN_FILL_MASK_MODEL and
LAZYTRAIN_FILL_MASK_GOLDEN to check a model of your own with it).

Semantics (transformers' FillMaskPipeline): every input holds the tokenizer's mask token at least
once; per mask position, softmax over the vocabulary (float32), top_k by probability, each result
{score, token, token_str = decode([token]), sequence = decode(input ids with that mask filled,
skip_special_tokens = (one mask))}; one mask gives a list of dicts, several give a list per mask.
"""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from bert import BertForMaskedLM  # noqa: E402
from roberta import RobertaForMaskedLM  # noqa: E402
from safetensors_io import load_file, save_file  # noqa: E402
import wordpiece  # noqa: E402


class WordPiece:
    """BertTokenizer (uncased) with HF's decode: ' '.join(tokens).replace(' ##', '').strip(), then
    clean_up_tokenization_spaces."""
    mask_token = "[MASK]"

    def __init__(self, vocab_file):
        self.tok = wordpiece.BertTokenizer(vocab_file)
        self.mask_token_id, self.pad_token_id = self.tok.mask_token_id, self.tok.pad_token_id
        self.special_ids = {self.tok.vocab[t] for t in wordpiece.SPECIAL}

    def __len__(self):
        return len(self.tok)

    def encode(self, text):
        # HF splits the text on special tokens before BasicTokenizer ("[MASK]." -> "[MASK]", ".").
        ids, parts = [], text.split(self.mask_token)
        for i, part in enumerate(parts):
            if i > 0:
                ids.append(self.mask_token_id)
            ids += self.tok.encode(part, add_special_tokens=False)
        return [self.tok.cls_token_id] + ids + [self.tok.sep_token_id]

    def decode(self, ids, skip_special_tokens=False):
        tokens = [self.tok.inv_vocab[i] for i in ids if not (skip_special_tokens and i in self.special_ids)]
        text = " ".join(tokens).replace(" ##", "").strip()
        for a, b in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                     (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
            text = text.replace(a, b)
        return text


class SentencePiece:
    """lazytrain's RoBERTa tokenizer: a SentencePiece model with <s>=0 <pad>=1 </s>=2 <unk>=3 <mask>=4."""
    mask_token, mask_token_id, pad_token_id = "<mask>", 4, 1

    def __init__(self, model_file):
        import sentencepiece  # Debian: apt-get install python3-sentencepiece
        self.sp = sentencepiece.SentencePieceProcessor(model_file=model_file)

    def __len__(self):
        return self.sp.get_piece_size()

    def encode(self, text):
        # <mask> takes the space before it (RoBERTa's lstrip=True): no lone "▁" piece before it.
        ids = self.sp.encode(text)
        ids = [t for i, t in enumerate(ids)
               if not (i + 1 < len(ids) and ids[i + 1] == self.mask_token_id and self.sp.id_to_piece(t) == "▁")]
        return [0] + ids + [2]

    def decode(self, ids, skip_special_tokens=False):
        return self.sp.decode([i for i in ids if not (skip_special_tokens and i <= 4 and i != 3)])


def load_model_dir(model_dir):
    """(model in eval mode, tokenizer, config dict) of a directory written by `lazytrain run_mlm`."""
    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    model_type = config.get("model_type", "bert")
    if model_type == "roberta":
        model, tok = RobertaForMaskedLM(config), SentencePiece(os.path.join(model_dir, "spm.model"))
    else:
        model, tok = BertForMaskedLM(config), WordPiece(os.path.join(model_dir, "vocab.txt"))
    weights = load_file(os.path.join(model_dir, "model.safetensors"))
    params = dict(model.named_parameters())
    tied = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias", "lm_head.decoder.weight",
            "lm_head.decoder.bias"}
    extra = sorted(set(weights) - set(params) - tied)
    missing = sorted(set(params) - set(weights))
    if extra or missing:
        sys.exit(f"{model_dir}/model.safetensors: missing {missing}, unexpected {extra}")
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(weights[name])
    model.eval()
    return model, tok, config


def fill_mask(model, tok, texts, top_k=5):
    """One entry per text: dict(input_ids, mask_positions, mask_logits [M, V], top_ids, top_scores,
    result = the pipeline's output for that text). Texts run one at a time (no padding)."""
    out = []
    for text in texts:
        ids = tok.encode(text)
        masks = [i for i, t in enumerate(ids) if t == tok.mask_token_id]
        if not masks:
            sys.exit(f"no mask token {tok.mask_token} in {text!r}")
        input_ids = torch.tensor([ids])
        with torch.no_grad():
            logits = model(input_ids, torch.ones_like(input_ids))["logits"][0]
        mask_logits = logits[masks]
        scores, top = mask_logits.softmax(-1).topk(min(top_k, mask_logits.shape[-1]))
        single = len(masks) == 1
        per_mask = []
        for m, (s_row, t_row) in enumerate(zip(scores.tolist(), top.tolist())):
            row = []
            for s, t in zip(s_row, t_row):
                filled = list(ids)
                filled[masks[m]] = t
                filled = [i for i in filled if i != tok.pad_token_id]
                row.append({"score": s, "token": t, "token_str": tok.decode([t]),
                            "sequence": tok.decode(filled, skip_special_tokens=single)})
            per_mask.append(row)
        out.append(dict(input_ids=input_ids[0], mask_positions=torch.tensor(masks), mask_logits=mask_logits,
                        top_ids=top, top_scores=scores, result=per_mask[0] if single else per_mask))
    return out


def save_golden(path, texts, top_k, model_type, entries):
    tensors = {}
    for i, e in enumerate(entries):
        for key in ("input_ids", "mask_positions", "mask_logits", "top_ids", "top_scores"):
            tensors[f"{key}.{i}"] = e[key].contiguous()
    save_file(tensors, path, metadata={"texts": json.dumps(texts), "top_k": str(top_k), "model_type": model_type,
                                       "expected": json.dumps([e["result"] for e in entries]),
                                       "generator": "tools/torch_reference/fill_mask.py (torch " + torch.__version__ + ")"})


def print_readable(texts, entries):
    """The layout of `lazytrain fill_mask` without --json."""
    for text, e in zip(texts, entries):
        print(text)
        rows = e["result"] if isinstance(e["result"][0], list) else [e["result"]]
        for m, row in enumerate(rows):
            if len(rows) > 1:
                print(f"  mask {m + 1} of {len(rows)}:")
            for rank, r in enumerate(row, 1):
                print(f"  {rank}. {r['score']:.4f}  {r['token_str']}  {r['sequence']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", action="append", required=True)
    ap.add_argument("--top_k", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--save_golden")
    args = ap.parse_args()
    torch.set_num_threads(2)
    model, tok, config = load_model_dir(args.model)
    entries = fill_mask(model, tok, args.text, args.top_k)
    if args.save_golden:
        save_golden(args.save_golden, args.text, args.top_k, config.get("model_type", "bert"), entries)
    if args.json:
        results = [e["result"] for e in entries]
        print(json.dumps(results[0] if len(results) == 1 else results))
    else:
        print_readable(args.text, entries)


if __name__ == "__main__":
    main()
